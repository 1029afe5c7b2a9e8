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

// typingMaxChats bounds the chats one connection may type in within
// typingInterval, and so the limiter's map: nobody types in more at once,
// and a flood of new chat ids must not grow memory or reach the store.
const typingMaxChats = 32

// typingVerdict is what the limiter decides about one typing frame.
type typingVerdict int

const (
	typingPass   typingVerdict = iota
	typingRecent               // the chat passed within typingInterval: dropped silently, free
	typingFull                 // typingMaxChats other chats did: dropped, and refused
)

// allow decides a typing frame for chat at now; on typingPass it starts the
// chat's interval. Expired chats are forgotten when the map is full.
func (l *typingLimiter) allow(chat string, now time.Time) typingVerdict {
	t, ok := l.last[chat]
	if ok && now.Sub(t) < typingInterval {
		return typingRecent
	}
	if l.last == nil {
		l.last = make(map[string]time.Time)
	}
	if !ok && len(l.last) >= typingMaxChats {
		for c, t := range l.last {
			if now.Sub(t) >= typingInterval {
				delete(l.last, c)
			}
		}
		if len(l.last) >= typingMaxChats {
			return typingFull
		}
	}
	l.last[chat] = now
	return typingPass
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
// unknown chat or a non-member. A repeat within the interval is dropped for
// free (clients may send one per keystroke); any other frame is charged a
// token before the membership check, so the budget and the abuse rule bound
// the store queries a connection can cause with chats the member cache does
// not hold. Over the budget the frame is dropped without an answer (the
// contract gives typing none) and counts toward the abuse rule.
func (s *session) onTyping(f *wire.ClientFrame) {
	switch s.typing.allow(f.Chat, s.g.cfg.Now()) {
	case typingRecent:
		// A repeat is dropped, but still read and parsed: it costs a unit,
		// as a ping does, so a client repeating typing as fast as it can
		// runs out of budget and is closed like any other flood.
		if !s.limits.allow(s.g.cfg.Now(), 1) {
			s.typingLimited()
			return
		}
		s.g.metrics.framesIn.inc("typing_dropped")
		return
	case typingFull:
		s.typingLimited()
		return
	}
	if !s.limits.allow(s.g.cfg.Now(), tokenUnits) {
		s.typingLimited()
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.g.cfg.StoreTimeout)
	defer cancel()
	members, err := s.g.srv.members.members(ctx, f.Chat, s.id.User)
	if err != nil {
		s.signalFailed(f.Chat, err)
		return
	}
	s.abuse.carriedOut()
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

// typingLimited drops a typing frame over the connection's limits.
func (s *session) typingLimited() {
	s.g.metrics.framesIn.inc("typing_limited")
	s.refused()
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
