package push

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
