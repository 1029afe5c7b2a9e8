package api

import (
	"sync"
	"time"
)

// A user whose connection was closed for abuse (4008: refused frames in a
// row; 4400: a protocol violation) waits before the next upgrade is
// accepted: a client that floods or sends garbage and redials at once would
// otherwise cost a session, a presence change and a read loop per redial,
// paid by every other user of the machine. The wait doubles with each close
// that comes while the last one is recent, and is forgotten after a quiet
// spell.
const (
	penaltyMax    = time.Minute
	penaltyForget = 10 * time.Minute
	// penaltyUsers bounds the box: past it, entries whose wait is over go
	// first, then any.
	penaltyUsers = 10000
)

// penaltyBox holds the users waiting after an abuse close. Safe for
// concurrent use.
type penaltyBox struct {
	first time.Duration // the first wait (Config.Abuse.Wait); none when not above 0

	mu    sync.Mutex
	users map[string]penalty
}

type penalty struct {
	until time.Time     // no upgrade before this
	wait  time.Duration // the last wait given
}

// punish starts or lengthens user's wait from now.
func (b *penaltyBox) punish(user string, now time.Time) {
	if b.first <= 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.users == nil {
		b.users = make(map[string]penalty)
	}
	p, ok := b.users[user]
	switch {
	case !ok || now.Sub(p.until) > penaltyForget:
		p.wait = b.first
	default:
		p.wait = min(2*p.wait, penaltyMax)
	}
	p.until = now.Add(p.wait)
	if !ok && len(b.users) >= penaltyUsers {
		b.evictLocked(now)
	}
	b.users[user] = p
}

// waitFor is how long user must still wait; 0 lets the upgrade through.
func (b *penaltyBox) waitFor(user string, now time.Time) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	p, ok := b.users[user]
	if !ok || !now.Before(p.until) {
		return 0
	}
	return p.until.Sub(now)
}

// evictLocked makes room: users whose wait is over and forgotten first,
// then whose wait is over, then one at random.
func (b *penaltyBox) evictLocked(now time.Time) {
	for u, p := range b.users {
		if now.Sub(p.until) > penaltyForget {
			delete(b.users, u)
		}
	}
	if len(b.users) < penaltyUsers {
		return
	}
	for u, p := range b.users {
		if !now.Before(p.until) {
			delete(b.users, u)
		}
	}
	for u := range b.users {
		if len(b.users) < penaltyUsers {
			return
		}
		delete(b.users, u)
	}
}
