package api

import (
	"sync"
	"time"

	"github.com/chatd/chatd/pkg/wire"
)

// tokenLife is a session's token expiry (docs/protocol.md "Token lifetime on
// an open WebSocket"). It is one timer per session, like the pinger: no
// goroutine exists until it fires, and an in-band refresh moves it.
type tokenLife struct {
	mu    sync.Mutex
	exp   time.Time   // guarded by mu; the exp of the latest accepted token
	timer *time.Timer // guarded by mu; nil until startExpiry
	ended bool        // guarded by mu; set by stopExpiry, after which nothing re-arms
}

// startExpiry arms the close at the upgrade token's exp. A token that
// expired between the upgrade and now fires at once.
func (s *session) startExpiry() {
	a := &s.auth
	a.mu.Lock()
	defer a.mu.Unlock()
	a.exp = s.id.Expires
	a.timer = time.AfterFunc(s.untilExp(a.exp), s.expire)
}

// untilExp is how long the token with exp stays valid, by the clock the
// verifier uses, so that "expired" means the same here and at the upgrade.
func (s *session) untilExp(exp time.Time) time.Duration {
	return exp.Sub(s.g.cfg.Now())
}

// expire closes the session with 4401 once its token's exp has passed. A
// firing that lost the race with a refresh (Reset cannot recall a callback
// already started) finds a later exp and re-arms instead.
func (s *session) expire() {
	a := &s.auth
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.ended {
		return
	}
	if d := s.untilExp(a.exp); d > 0 {
		a.timer.Reset(d)
		return
	}
	if s.closeWith(wire.CloseUnauthorized, "token expired") {
		s.g.metrics.tokenExpired.Inc()
	}
}

// stopExpiry stops the timer and waits out an expire in progress, so the
// timer touches nothing after run returns.
func (s *session) stopExpiry() {
	a := &s.auth
	a.mu.Lock()
	defer a.mu.Unlock()
	a.ended = true
	if a.timer != nil {
		a.timer.Stop()
	}
}

// onAuth handles an in-band refresh. The new token must verify exactly as
// at the upgrade and speak for the same user and device: a session cannot
// change who it is, because push and receipts have it registered under that
// identity. Anything else closes with 4401; the client must reconnect with a
// good token. The new exp replaces the old one even when it is earlier (the
// issuer may shorten a session).
func (s *session) onAuth(f *wire.ClientFrame) {
	if !s.charge(tokenUnits, "") {
		return
	}
	id, err := s.g.srv.verifier.verify(f.Token)
	switch {
	case err != nil:
		s.logger().Debug("token refresh refused", "err", err)
		s.refuseRefresh("refresh token invalid or expired")
		return
	case id.User != s.id.User || id.Device != s.id.Device || id.Service != s.id.Service:
		s.logger().Debug("token refresh refused", "sub", id.User, "dev", id.Device)
		s.refuseRefresh("refresh token names another user or device")
		return
	}
	a := &s.auth
	a.mu.Lock()
	if a.ended || a.timer == nil {
		a.mu.Unlock()
		return
	}
	a.exp = id.Expires
	a.timer.Reset(s.untilExp(a.exp))
	a.mu.Unlock()
	s.g.metrics.tokenRefreshes.WithLabelValues("ok").Inc()
	s.abuse.carriedOut()
	s.send(wire.AppendAuthed(nil, id.Expires.Unix()), "authed")
}

func (s *session) refuseRefresh(reason string) {
	s.g.metrics.tokenRefreshes.WithLabelValues("refused").Inc()
	s.closeWith(wire.CloseUnauthorized, reason)
}
