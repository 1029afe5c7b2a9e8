package client

import (
	"context"
	"time"

	"github.com/chatd/chatd/pkg/wire"
)

// refreshShare is the part of a token's lifetime, counted from when the
// client got it, after which the token is refreshed when Config.RefreshBefore
// is zero: late enough not to ask the issuer too often, early enough to
// leave a fifth of the lifetime for the round trip and a clock apart.
const refreshShare = 0.8

// Bounds of the wait before asking TokenFunc again when it failed or handed
// back the token the server already holds.
const (
	minRefreshRetry = 100 * time.Millisecond
	maxRefreshRetry = 5 * time.Second
)

// refresher keeps a session's token alive in-band (docs/protocol.md "Token
// lifetime on an open WebSocket"): before the token's exp it gets a new one
// from TokenFunc and sends it in an `auth` frame; the server's `authed`
// confirms the new exp. The session goes on as it is: no reconnect, no
// resync. A refused token closes the session with 4401 (ErrUnauthorized).
// Its fields belong to run's goroutine, except authed.
type refresher struct {
	s      *session
	token  string    // the token the server holds for this session
	exp    time.Time // its exp; zero: unknown, never refreshed
	got    time.Time // when the client obtained it
	authed chan int64
}

func newRefresher(s *session, token string) *refresher {
	return &refresher{s: s, token: token, exp: tokenExp(token), got: time.Now(), authed: make(chan int64, 1)}
}

// onAuthed hands the exp of an `authed` frame to run; called by the reader.
// A spare answer (none was asked for) is dropped rather than block reading.
func (r *refresher) onAuthed(exp int64) {
	select {
	case r.authed <- exp:
	default:
	}
}

// run refreshes until ctx ends. It returns at once when there is nothing to
// refresh with (a fixed Config.Token) or no exp to refresh ahead of; the
// server then closes with 4401 at exp, as before refreshes existed.
func (r *refresher) run(ctx context.Context) error {
	if r.s.c.cfg.TokenFunc == nil || r.exp.IsZero() {
		return nil
	}
	for {
		if !sleepCtx(ctx, time.Until(r.due())) {
			return nil
		}
		tok, err := r.s.c.token(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil || tok == r.token {
			r.s.c.log.Warn("no new token to refresh with", "exp", r.exp, "err", err)
			if !sleepCtx(ctx, r.retryDelay()) {
				return nil
			}
			continue
		}
		got := time.Now()
		if err := r.s.write(&wire.ClientFrame{Type: wire.FrameAuth, Token: tok}); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case exp := <-r.authed:
			r.token, r.exp, r.got = tok, time.Unix(exp, 0), got
			r.s.c.stats.tokenRefreshes.Add(1)
		}
	}
}

// due is when the current token should be replaced. With RefreshBefore it
// is never before half the token's lifetime: a lead longer than the tokens
// TokenFunc hands out would otherwise refresh again and again at once.
func (r *refresher) due() time.Time {
	life := r.exp.Sub(r.got)
	if lead := r.s.c.cfg.RefreshBefore; lead > 0 {
		return r.exp.Add(-min(lead, life/2))
	}
	return r.got.Add(time.Duration(refreshShare * float64(life)))
}

// retryDelay spreads the retries over what is left of the token's life.
func (r *refresher) retryDelay() time.Duration {
	return min(max(time.Until(r.exp)/4, minRefreshRetry), maxRefreshRetry)
}

// sleepCtx waits d (nothing when d <= 0) and reports false if ctx ended first.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
