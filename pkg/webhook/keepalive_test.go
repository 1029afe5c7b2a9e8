package webhook_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/chatd/chatd/internal/testnats"
	"github.com/chatd/chatd/pkg/webhook"
)

// The deliverer tells JetStream it is still working on an event (an
// in-progress ack) only once it has held the event a third of the ack
// wait: an event delivered sooner needs none, and telling every held event
// at every keep-alive was a burst of acks on a busy endpoint. An event
// held past the ack wait (its endpoint down) is told in time and never
// redelivered.
func TestKeepAliveOnlyForEventsHeldLong(t *testing.T) {
	for _, tt := range []struct {
		name          string
		ackWait       time.Duration
		outage        bool
		wantKeptAlive bool
	}{
		// Each answer takes 300 ms, the keep-alive runs every 2 s: no
		// event is ever held 2 s, but about two are held at every tick.
		{"each delivered within a few hundred ms", 6 * time.Second, false, false},
		// The endpoint is down for 6 s, twice the ack wait: without
		// in-progress acks every held event would be redelivered.
		{"held past the ack wait by an outage", 3 * time.Second, true, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := mustRig(t)
			rc := newReceiver(t)
			ep := endpoint(rc)
			nc := testnats.Connect(t, r.ns)
			inProgress := testnats.InProgressAcks(t, nc, webhook.ConsumerName(ep.URL))
			if tt.outage {
				rc.setMode("drop")
			} else {
				rc.delay.Store(int64(300 * time.Millisecond))
			}
			d := r.start(t, r.js, webhook.Config{Endpoints: []webhook.Endpoint{ep}, AckWait: tt.ackWait, Workers: 4,
				MaxAttempts: 1000}) // none set aside during the outage
			waitDelivering(t, d)
			want := map[string]int64{}
			for i := range 40 { // over 6 s: three keep-alives of the first case, six of the second
				chat := fmt.Sprint("c", i%8)
				r.publish(t, chat, "")
				want[chat]++
				time.Sleep(150 * time.Millisecond)
			}
			rc.setMode("ok")
			rc.waitUntil(t, "every event", func(r *receiver) bool { return r.distinct() == 40 })
			rc.checkOrder(t, want)
			switch got := inProgress(); {
			case tt.wantKeptAlive && got == 0:
				t.Fatalf("no in-progress ack for events held past the ack wait of %v", tt.ackWait)
			case !tt.wantKeptAlive && got > 0:
				t.Fatalf("%d in-progress acks for events delivered within a third of the ack wait of %v", got, tt.ackWait)
			}
			info, err := consumerInfo(r, ep)
			if err != nil {
				t.Fatal(err)
			}
			if info.NumRedelivered != 0 {
				t.Fatalf("%d held events redelivered: their ack wait ran out while held", info.NumRedelivered)
			}
		})
	}
}
