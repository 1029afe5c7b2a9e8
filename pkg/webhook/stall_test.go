package webhook_test

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/chatd/chatd/internal/testlog"
	"github.com/chatd/chatd/internal/testnats"
	"github.com/chatd/chatd/internal/testproxy"
	"github.com/chatd/chatd/internal/testwait"
	"github.com/chatd/chatd/pkg/webhook"
)

// The deliverer's link to NATS stalls (open, but nothing gets through) for
// longer than its pull's heartbeats: it warns that reading the endpoint's
// events failed and to check NATS, and once the link flows again it
// delivers every event, those published during the stall among them. (A
// link cut outright warns nothing: the NATS client reconnects and the pull
// resumes by itself.)
func TestStalledLinkWarnsThenDeliversEverything(t *testing.T) {
	ns := testnats.StartListening(t)
	r := mustRigOn(t, ns)
	proxy := testproxy.Start(t, ns.Server().Addr().String())
	js := testnats.JetStreamOf(t, testnats.Dial(t, proxy.URL("nats")))
	var logs testlog.Buffer
	rc := newReceiver(t)
	d := r.start(t, js, webhook.Config{Endpoints: []webhook.Endpoint{endpoint(rc)}, Workers: 2,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	waitDelivering(t, d)
	for range 5 {
		r.publish(t, "c1", "")
	}
	rc.waitUntil(t, "the events before the cut", func(r *receiver) bool { return r.distinct() == 5 })

	proxy.Stall()
	for range 5 {
		r.publish(t, "c1", "") // the rig publishes in process, past the proxy
	}
	const warning = `msg="reading the endpoint's events from the stream failed; pulling again, its deliveries wait meanwhile (check NATS)"`
	testwait.For(t, 10*time.Second, "the warning while stalled", func() bool { return strings.Contains(logs.String(), warning) })
	proxy.Resume()
	rc.waitUntil(t, "every event, those published during the cut among them", func(r *receiver) bool { return r.distinct() == 10 })
	rc.checkOrder(t, map[string]int64{"c1": 10})
}
