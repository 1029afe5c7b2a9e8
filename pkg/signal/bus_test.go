package signal_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/internal/testnats"
	"github.com/chatd/chatd/pkg/signal"
)

// Two buses on one NATS stand for two nodes: a signal published on one
// reaches both (the publisher's own node too, which is how a receipt has a
// single fan-out path), whole; presence does not travel on the bus.
func TestBusCrossesNodes(t *testing.T) {
	ns := testnats.Start(t)
	got := [2]chan chatd.Signal{make(chan chatd.Signal, 128), make(chan chatd.Signal, 128)}
	buses := make([]*signal.Bus, 2)
	for i := range buses {
		nc := testnats.Connect(t, ns)
		ch := got[i]
		b, err := signal.NewBus(signal.BusConfig{Conn: nc, Deliver: func(s chatd.Signal) {
			select { // Deliver must not block
			case ch <- s:
			default:
			}
		}})
		if err != nil {
			t.Fatal(err)
		}
		buses[i] = b
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- b.Run(ctx) }()
		t.Cleanup(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("run: %v", err)
			}
		})
	}
	want := chatd.Signal{Kind: chatd.SignalReceipt, Chat: "c1", User: "bob", SkipDevice: "phone", Upto: "m1", Seq: 7, To: []string{"alice", "bob"}}
	// Each Run subscribes asynchronously, the publisher's own too: publish
	// until both nodes have had one.
	deadline := time.Now().Add(5 * time.Second)
	var first chatd.Signal
	crossed, own := false, false
	for !crossed || !own {
		if time.Now().After(deadline) {
			t.Fatalf("within 5 s: crossed to the other node %v, reached the publishing node %v", crossed, own)
		}
		if err := buses[0].Publish(want); err != nil {
			t.Fatal(err)
		}
		select {
		case s := <-got[1]:
			if !crossed {
				first, crossed = s, true
			}
		case <-got[0]:
			own = true
		case <-time.After(50 * time.Millisecond):
		}
	}
	if first.Kind != want.Kind || first.Chat != want.Chat || first.User != want.User || first.SkipDevice != want.SkipDevice ||
		first.Upto != want.Upto || first.Seq != want.Seq || len(first.To) != 2 {
		t.Errorf("got %+v, want %+v", first, want)
	}
	if err := buses[0].Publish(chatd.Signal{Kind: chatd.SignalPresence, User: "bob"}); err == nil {
		t.Error("presence published on the bus, want an error")
	}
	if _, err := signal.NewBus(signal.BusConfig{}); err == nil || errors.Is(err, context.Canceled) {
		t.Errorf("NewBus without Conn: got %v, want an error", err)
	}
}
