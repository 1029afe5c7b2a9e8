package api

import (
	"context"
	"time"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/pkg/wire"
)

// typingInterval is the contract's limit: at most one typing frame per
// connection per chat passes in this long; the rest are dropped silently.
const typingInterval = 3 * time.Second

// typingLimiter keeps when each chat's last typing frame of one connection
// passed. Only the connection's read loop uses it, so it has no lock.
type typingLimiter struct {
	last map[string]time.Time
}

// typingPrune is the chat count past which allow forgets expired chats, so
// a connection typing in many chats keeps a small map.
const typingPrune = 32

// allow reports whether a typing frame for chat at now passes, and if so
// starts the chat's interval.
func (l *typingLimiter) allow(chat string, now time.Time) bool {
	if t, ok := l.last[chat]; ok && now.Sub(t) < typingInterval {
		return false
	}
	if l.last == nil {
		l.last = make(map[string]time.Time)
	}
	if len(l.last) >= typingPrune {
		for c, t := range l.last {
			if now.Sub(t) >= typingInterval {
				delete(l.last, c)
			}
		}
	}
	l.last[chat] = now
	return true
}

// sent ends chat's interval when the connection sends a message there. The
// others' clients stop showing "is typing" when that message arrives, so a
// typing frame right after it is news, not a repeat: dropping it made the
// next message's indicator show up to 3 s late. Messages are rate limited,
// so this cannot lift typing frames above the send rate.
func (l *typingLimiter) sent(chat string) {
	delete(l.last, chat)
}

// onTyping tells the chat's other members, on every node, that this user
// is typing. Not stored, not acked; the only answer is a rejection for an
// unknown chat or a non-member. The membership check reads the member
// cache, so a typing frame costs the database a query only on a miss.
func (s *session) onTyping(f wire.ClientFrame) {
	if !s.typing.allow(f.Chat, s.g.cfg.Now()) {
		s.g.metrics.framesIn.inc("typing_dropped")
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.g.cfg.StoreTimeout)
	defer cancel()
	members, err := s.g.srv.members.members(ctx, f.Chat, s.id.User)
	if err != nil {
		s.signalFailed(f.Chat, err)
		return
	}
	to := make([]string, 0, len(members))
	for _, m := range members {
		if m != s.id.User { // not to the typist's other devices
			to = append(to, m)
		}
	}
	sig := chatd.Signal{Kind: chatd.SignalTyping, Chat: f.Chat, User: s.id.User, To: to}
	if err := s.g.srv.signals().Publish(sig); err != nil {
		s.g.srv.sampled.Warn("publish typing", "chat", f.Chat, "err", err)
	}
}

// signalFailed answers a client's own mistake (unknown chat, not a member)
// with `rejected` (cid ""), and logs a server-side failure.
func (s *session) signalFailed(chat string, err error) {
	code, status := errorCode(err)
	if status < 500 {
		s.reject("", code, err.Error())
		return
	}
	s.g.srv.sampled.Warn("signal: load chat", "chat", chat, "err", err)
}
