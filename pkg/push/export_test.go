package push

import "context"

// InFlight is how many stream messages the registry still tracks, for tests
// that prove nothing is left behind after a withdrawal.
func (r *Registry) InFlight() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.deliveries) + len(r.finals)
}

// PendingSetForTest is a pending set, for benchmarks of the pin.
type PendingSetForTest struct{ set pendingSet }

// NewPendingSetForTest returns a set of n pending sequences, out of order.
func NewPendingSetForTest(n int) PendingSetForTest {
	s := make(pendingSet, n)
	for i := range n {
		s[uint64((i*7919)%n+100)] = nil
	}
	return PendingSetForTest{s}
}

// Pin is pendingSet.pin.
func (p PendingSetForTest) Pin() (uint64, bool) { return p.set.pin() }

// Tracked is how many messages the fast path's account (settle.go) and the
// connections' fast entries still hold, for tests that prove Forget leaves
// nothing behind.
func (r *Registry) Tracked() (local, fast int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range r.sessions {
		fast += len(s.fast)
	}
	return len(r.settle.local), fast
}

// ListByHand keeps Run from listing the stream's consumers: the fast path
// would wake its listing, which then races the test's own (CheckAlone).
func ListByHand(c *Config) { c.listByHand = true }

// CheckAlone lists the stream's consumers now, as Run does every
// Config.AloneCheck, so settle tests decide when the listing happens.
func (r *Registry) CheckAlone(ctx context.Context) { r.checkAlone(ctx, nil) }
