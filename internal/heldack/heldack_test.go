package heldack

import (
	"testing"
	"time"
)

// A delivery taken just after a keep-alive is not told at the next one
// but is at the one after, before its ack wait runs out; with a server
// clock ahead of ours, the take time counts.
func TestToldBeforeTheAckWaitRunsOut(t *testing.T) {
	const ackWait = 30 * time.Second
	t0 := time.Unix(1000, 0)
	since := Since(t0.Add(time.Second), t0) // stored "later" by a clock running ahead
	if !since.Equal(t0) {
		t.Fatalf("since %v, want the take time %v", since, t0)
	}
	if Since(t0.Add(-time.Second), t0) != t0.Add(-time.Second) {
		t.Fatal("since is not the store time when that is earlier")
	}
	every := Every(ackWait)
	if every != 10*time.Second {
		t.Fatalf("every %v, want a third of the ack wait", every)
	}
	first, second := t0.Add(every-time.Millisecond), t0.Add(2*every-time.Millisecond)
	if Due(since, first, ackWait) {
		t.Fatal("told at the first keep-alive, held under a third of the ack wait")
	}
	if !Due(since, second, ackWait) || second.Sub(since) >= ackWait {
		t.Fatal("not told at the second keep-alive, before its ack wait runs out")
	}
	if Every(0) != 10*time.Millisecond {
		t.Fatal("a zero ack wait would tick without pause")
	}
}
