package push_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chatd/chatd/internal/testwait"
	"github.com/chatd/chatd/pkg/push"
	"github.com/chatd/chatd/pkg/stream"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// settleRegistry is a running registry that keeps the fast path's account
// (Config.Settle), with a lease longer than any of these tests. It never
// lists the stream's consumers by itself: the tests list them with settled.
func settleRegistry(t *testing.T) (*env, *push.Registry) {
	t.Helper()
	e := mustEnv(t)
	return e, mustRegistry(t, e, "a", func(c *push.Config) {
		c.Lease = 10 * time.Second
		c.Settle = true
		push.ListByHand(c)
	})
}

// settled lists the stream's consumers, as the registry's Run does every
// Config.AloneCheck, and then asks whether message id reads settled.
func settled(t *testing.T, r *push.Registry, id string) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r.CheckAlone(ctx)
	s, _ := r.Settled(id)
	return s
}

// taken asks, as the relay does of a settled message, whether it was taken.
func taken(r *push.Registry, id string) bool {
	_, tk := r.Settled(id)
	return tk
}

// attachAll registers conns with r.
func attachAll(t *testing.T, r *push.Registry, conns ...*recConn) {
	t.Helper()
	for _, c := range conns {
		if err := r.Attach(c); err != nil {
			t.Fatal(err)
		}
	}
}

// A message is settled only once every connection the fast path handed it
// to has acked it; a withdrawn connection counts as done (it resyncs from
// history). Until then the relay must publish it.
func TestSettledNeedsEveryFastPathRecipient(t *testing.T) {
	e, r := settleRegistry(t)
	bob := &recConn{user: "bob", device: "phone"}
	bobWeb := &recConn{user: "bob", device: "web"}
	carol := &recConn{user: "carol", device: "phone"}
	attachAll(t, r, bob, bobWeb, carol)
	m := e.newMsg("alice")
	if settled(t, r, m.ID) {
		t.Fatal("settled before the fast path ran")
	}
	r.FastPath(&m, []string{"alice", "bob", "carol"})
	if settled(t, r, m.ID) {
		t.Fatal("settled with no ack")
	}
	r.Ack(bob, []string{m.ID})
	r.Ack(bob, []string{m.ID}) // a repeated ack counts once
	if settled(t, r, m.ID) {
		t.Fatal("settled with bob/web and carol not acked")
	}
	r.Ack(carol, []string{m.ID})
	if settled(t, r, m.ID) {
		t.Fatal("settled with bob/web not acked")
	}
	r.Detach(bobWeb) // left live delivery: it reads the message from history
	if !settled(t, r, m.ID) {
		t.Fatal("not settled after every recipient acked or left")
	}
	r.Forget([]string{m.ID}, nil)
	if local, fast := r.Tracked(); local != 0 || fast != 0 {
		t.Fatalf("after Forget of a settled message: %d accounts, %d fast entries left, want none", local, fast)
	}
	if settled(t, r, m.ID) {
		t.Fatal("a forgotten message still reads settled")
	}
}

// A registered recipient whose queue refused the frame gets it only from
// the stream: the message never reads settled, whatever the others do.
func TestMissedRecipientNeverSettles(t *testing.T) {
	e, r := settleRegistry(t)
	bob := &recConn{user: "bob", device: "phone"}
	full := &recConn{user: "carol", device: "phone"}
	attachAll(t, r, bob, full)
	full.Close(push.ReasonOverloaded) // its Deliver now refuses, as a full queue does
	m := e.newMsg("alice")
	r.FastPath(&m, []string{"alice", "bob", "carol"})
	r.Ack(bob, []string{m.ID})
	if settled(t, r, m.ID) {
		t.Fatal("settled though carol's connection never got the frame")
	}
}

// A message the relay published keeps its fast entries through Forget, even
// once every recipient acked: its stream delivery neither sends the frame
// again nor waits for the ack that already came.
func TestForgetKeepsFastEntriesOfAPublishedMessage(t *testing.T) {
	e, r := settleRegistry(t)
	bob := &recConn{user: "bob", device: "phone"}
	carol := &recConn{user: "carol", device: "phone"}
	attachAll(t, r, bob, carol)
	m := e.newMsg("alice")
	r.FastPath(&m, []string{"alice", "bob", "carol"})
	r.Ack(bob, []string{m.ID})
	// The relay published it (carol had not acked), and carol acked after
	// the relay's last look: it is settled now, but its stream delivery is
	// on the way.
	r.Ack(carol, []string{m.ID})
	r.Forget(nil, []string{m.ID})
	_, seq := e.publishMsg(t, m, "web", "alice", "bob", "carol")
	testwait.Until(t, "stream message acked", func() bool { return ackFloor(t, e, "a") == seq })
	if len(bob.received()) != 1 || len(carol.received()) != 1 {
		t.Fatalf("frames: bob %d carol %d, want 1 1 (the stream delivery re-sent)", len(bob.received()), len(carol.received()))
	}
}

// Without Config.Settle the registry keeps no account: nothing reads
// settled, so a relay given it by mistake publishes everything.
func TestNoSettleKeepsNoAccount(t *testing.T) {
	e := mustEnv(t)
	r := mustRegistry(t, e, "a", func(c *push.Config) { c.Lease = 10 * time.Second })
	bob := &recConn{user: "bob", device: "phone"}
	attachAll(t, r, bob)
	m := e.newMsg("alice")
	r.FastPath(&m, []string{"alice", "bob"})
	r.Ack(bob, []string{m.ID})
	if settled(t, r, m.ID) {
		t.Fatal("settled without Config.Settle")
	}
	if local, _ := r.Tracked(); local != 0 {
		t.Fatalf("%d accounts kept without Config.Settle", local)
	}
}

// A message reads settled only if a listing of the stream's consumers that
// began after its fast path found none but this node's. Another consumer
// made after the fast path and the acks, but before that listing, is seen:
// a node that joined meanwhile (its consumer is made before any of its
// sessions says `hello`) keeps the message in the stream for its sessions.
// So is a consumer that is no node's: an integration's or the nats CLI's.
// Settling resumes once it is gone.
func TestAnotherConsumerStopsSettling(t *testing.T) {
	for _, name := range []string{push.ConsumerName("b"), "nats-cli-view"} {
		t.Run(name, func(t *testing.T) {
			e, r := settleRegistry(t)
			bob := &recConn{user: "bob", device: "phone"}
			attachAll(t, r, bob)
			alone := e.newMsg("alice")
			r.FastPath(&alone, []string{"alice", "bob"})
			r.Ack(bob, []string{alone.ID})
			if !settled(t, r, alone.ID) {
				t.Fatal("not settled, alone on the stream and acked by its only recipient")
			}

			m := e.newMsg("alice")
			r.FastPath(&m, []string{"alice", "bob"})
			r.Ack(bob, []string{m.ID})
			ctx := context.Background()
			if _, err := e.js.CreateConsumer(ctx, stream.DefaultName, jetstream.ConsumerConfig{
				Durable: name, AckPolicy: jetstream.AckExplicitPolicy, DeliverPolicy: jetstream.DeliverNewPolicy,
			}); err != nil {
				t.Fatal(err)
			}
			if s, _ := r.Settled(m.ID); s {
				t.Fatal("settled before any listing began after its fast path")
			}
			if settled(t, r, m.ID) {
				t.Fatalf("settled with consumer %s on the stream", name)
			}
			later := e.newMsg("alice")
			r.FastPath(&later, []string{"alice", "bob"})
			r.Ack(bob, []string{later.ID})
			if settled(t, r, later.ID) {
				t.Fatalf("a later message settled with consumer %s on the stream", name)
			}

			if err := e.js.DeleteConsumer(ctx, stream.DefaultName, name); err != nil {
				t.Fatal(err)
			}
			if !settled(t, r, later.ID) {
				t.Fatalf("not settled once consumer %s is gone", name)
			}
		})
	}
}

// While the relay publishes taken messages apart (webhooks), a consumer
// that reads them (an endpoint's: no filter; or one whose filter takes
// them) and a named skipper (the notifier) keep the node settling; one that
// filters them out (another node's live delivery) ends it. A message is
// taken only when every recipient but the sender had a connection.
func TestTakenModeAndOtherConsumers(t *testing.T) {
	const live, takenPrefix = stream.SubjectPrefix + "*", stream.SubjectPrefix + "taken."
	for _, tc := range []struct {
		name, filter string
		settles      bool
	}{
		{"hook-0123456789ab", "", true},
		{"view", stream.SubjectPrefix + ">", true},
		{"taken-only", takenPrefix + "*", true},
		{"hook-notify", live, true},
		{push.ConsumerName("b"), live, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := mustEnv(t)
			r := mustRegistry(t, e, "a", func(c *push.Config) {
				c.Lease, c.Settle = 10*time.Second, true
				push.ListByHand(c)
				c.Filter, c.TakenPrefix, c.TakenSkippers = live, takenPrefix, []string{"hook-notify"}
			})
			bob := &recConn{user: "bob", device: "phone"}
			attachAll(t, r, bob)
			if _, err := e.js.CreateConsumer(context.Background(), stream.DefaultName, jetstream.ConsumerConfig{
				Durable: tc.name, AckPolicy: jetstream.AckExplicitPolicy, DeliverPolicy: jetstream.DeliverNewPolicy, FilterSubject: tc.filter,
			}); err != nil {
				t.Fatal(err)
			}
			m := e.newMsg("alice")
			r.FastPath(&m, []string{"alice", "bob"})
			r.Ack(bob, []string{m.ID})
			if got := settled(t, r, m.ID); got != tc.settles {
				t.Fatalf("with consumer %s (filter %q): settled %v, want %v", tc.name, tc.filter, got, tc.settles)
			}
			if tc.settles && !taken(r, m.ID) {
				t.Fatal("settled, acked by bob, its one recipient but the sender, yet not taken")
			}
			away := e.newMsg("alice")
			r.FastPath(&away, []string{"alice", "bob", "carol"})
			r.Ack(bob, []string{away.ID})
			if tc.settles && (!settled(t, r, away.ID) || taken(r, away.ID)) {
				t.Fatal("with carol, a recipient, not connected: want settled but not taken")
			}
		})
	}
}

// An idle node does not list the stream's consumers at the settle cadence,
// nor on a timer of its own here (IdleCheck an hour): a listing proves
// something only for a message that waits to read settled. The fast path
// handling one wakes the listing, so that message reads settled once
// acked.
func TestIdleRegistryListsSeldom(t *testing.T) {
	e := mustEnv(t)
	var listings atomic.Int64
	sub, err := e.js.Conn().Subscribe("$JS.API.CONSUMER.NAMES."+stream.DefaultName, func(*nats.Msg) { listings.Add(1) })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	r := mustRegistry(t, e, "a", func(c *push.Config) {
		c.Lease, c.Settle, c.AloneCheck, c.IdleCheck = 10*time.Second, true, 10*time.Millisecond, time.Hour
	})
	time.Sleep(2 * time.Second)
	if n := listings.Load(); n > 1 {
		t.Fatalf("an idle registry listed the stream's consumers %d times in 2 s at a 10 ms AloneCheck; want only the one at start", n)
	}
	bob := &recConn{user: "bob", device: "phone"}
	attachAll(t, r, bob)
	m := e.newMsg("alice")
	r.FastPath(&m, []string{"alice", "bob"})
	r.Ack(bob, []string{m.ID})
	testwait.For(t, 5*time.Second, "the acked message to read settled (the fast path wakes the listing)", func() bool {
		s, _ := r.Settled(m.ID)
		return s
	})
}
