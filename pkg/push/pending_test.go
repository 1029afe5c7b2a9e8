package push

import "testing"

// The pin is the minimum of the pending set: an out-of-order ack never lifts
// it past a gap (docs/architecture.md, invariant 2). White-box because the set
// is internal.
func TestPendingPinStaysAtGap(t *testing.T) {
	p := make(pendingSet)
	if _, ok := p.pin(); ok {
		t.Fatal("empty set has a pin")
	}
	for _, seq := range []uint64{102, 103, 104} {
		p[seq] = nil
	}
	delete(p, 104) // ack 104 while 102 is pending
	if got, _ := p.pin(); got != 102 {
		t.Fatalf("pin after acking 104: got %d, want 102", got)
	}
	delete(p, 103)
	if got, _ := p.pin(); got != 102 {
		t.Fatalf("pin after acking 103: got %d, want 102", got)
	}
	delete(p, 102)
	if _, ok := p.pin(); ok {
		t.Fatal("pin remains after every sequence was acked")
	}
}
