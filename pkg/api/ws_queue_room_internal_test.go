package api

import (
	"testing"

	"github.com/chatd/chatd/pkg/push"
	"github.com/chatd/chatd/pkg/wire"
)

// Signals (receipts, typing, presence) are best effort, but a burst of them
// must not take the room an `accepted` needs: that would close a client
// that reads promptly with 4001, as if it had stopped reading. The queue is
// held here as it is before `hello` (no writer runs), so nothing drains.
func TestSignalBurstLeavesRoomForAnswers(t *testing.T) {
	p := newWritePair(t)
	cfg := Config{Limits: Limits{MaxPending: push.DefaultMaxPending}} // as the node announces
	cfg.Limits.setDefaults()
	p.s.g.cfg.Limits = cfg.Limits
	p.s.g.cfg.OutboundQueue = cfg.Limits.Credits + 2*cfg.Limits.MaxPending + 16
	p.s.out = newOutQueue(p.s.g.cfg.OutboundQueue, p.s.g.cfg.answerRoom())

	receipt := wire.AppendReceipt(nil, "c1", "bob", "01JDW70A5E0B7N2QG8K1Y3M4RT", 12)
	for range 10 * p.s.g.cfg.OutboundQueue {
		p.s.offer(receipt, "receipt")
	}
	accepted := []byte(`{"type":"accepted"}`)
	for i := range p.s.g.cfg.Limits.Credits {
		p.s.send(accepted, "accepted")
		if p.s.closed() {
			t.Fatalf("answer %d of %d after a burst of receipts: session closed with %d, want every credit's answer queued", i+1, p.s.g.cfg.Limits.Credits, p.s.code)
		}
	}
	if got := counterValue(t, p.s.g.metrics.queueFull.WithLabelValues("receipt")); got == 0 {
		t.Errorf("no receipt was shed, want the burst past the signals' room counted in queueFull")
	}
}
