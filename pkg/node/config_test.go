package node

import (
	"github.com/chatd/chatd/pkg/push"
	"github.com/chatd/chatd/pkg/signal"
	"github.com/chatd/chatd/pkg/stream"
	"github.com/chatd/chatd/pkg/webhook"
	"strings"
	"testing"
	"time"
)

// docs/architecture.md, invariant 4: history must outlive the delivery buffer;
// a configuration that breaks it is refused at start instead of losing messages
// later.
func TestHistoryMustOutliveTheStream(t *testing.T) {
	checkDefaults(t, []defaultsCase{
		{"defaults", Config{DataDir: "d"}, false},
		{"history shorter than the stream", Config{DataDir: "d", HistoryRetention: time.Hour}, true},
		{"history equal to the stream", Config{DataDir: "d", HistoryRetention: 2 * time.Hour, Stream: stream.Config{MaxAge: 2 * time.Hour}}, true},
		{"history longer", Config{DataDir: "d", HistoryRetention: 3 * time.Hour, Stream: stream.Config{MaxAge: 2 * time.Hour}}, false},
	})
}

// A zero HistoryRetention stays zero (keep history forever), and is valid
// whatever the stream's max age; a negative one is refused.
func TestHistoryKeptForeverByDefault(t *testing.T) {
	cfg := Config{DataDir: "d"}
	if err := cfg.setDefaults(); err != nil {
		t.Fatal(err)
	}
	if cfg.HistoryRetention != 0 {
		t.Fatalf("default history retention %v, want 0 (keep forever)", cfg.HistoryRetention)
	}
	checkDefaults(t, []defaultsCase{
		{"forever with a long stream", Config{DataDir: "d", Stream: stream.Config{MaxAge: 1000 * time.Hour}}, false},
		{"negative", Config{DataDir: "d", HistoryRetention: -time.Hour}, true},
	})
}

// defaultsCase is a configuration and whether setDefaults refuses it.
type defaultsCase struct {
	name    string
	cfg     Config
	wantErr bool
}

func checkDefaults(t *testing.T, cases []defaultsCase) {
	t.Helper()
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.setDefaults()
			if (err != nil) != tt.wantErr {
				t.Fatalf("got %v, want error %v", err, tt.wantErr)
			}
		})
	}
}

// The duplicate window must cover a publish's retry (at least a second) and
// fit in the stream's max age, which JetStream would otherwise refuse only
// when the stream is made, with a less helpful error.
func TestStreamDuplicateWindowBounds(t *testing.T) {
	checkDefaults(t, []defaultsCase{
		{"default", Config{DataDir: "d"}, false},
		{"30s", Config{DataDir: "d", Stream: stream.Config{Duplicates: 30 * time.Second}}, false},
		{"under a second", Config{DataDir: "d", Stream: stream.Config{Duplicates: 500 * time.Millisecond}}, true},
		{"longer than the max age", Config{DataDir: "d", Stream: stream.Config{Duplicates: 3 * time.Hour, MaxAge: 2 * time.Hour}}, true},
		{"equal to the max age", Config{DataDir: "d", Stream: stream.Config{Duplicates: 2 * time.Hour, MaxAge: 2 * time.Hour}}, false},
	})
}

// The settle wait delays an unacked message's lease, so it must stay under
// the lease, alone or across nodes; with settling off it is not read.
func TestSettleWaitBounds(t *testing.T) {
	checkDefaults(t, []defaultsCase{
		{"default", Config{DataDir: "d"}, false},
		{"off", Config{DataDir: "d", Relay: stream.RelayConfig{SettleWait: -1}}, false},
		{"as long as the default lease", Config{DataDir: "d", Relay: stream.RelayConfig{SettleWait: 10 * time.Second}}, true},
		{"longer than the lease", Config{DataDir: "d", Relay: stream.RelayConfig{SettleWait: 2 * time.Second}, Push: push.Config{Lease: time.Second}}, true},
		{"under the lease", Config{DataDir: "d", Relay: stream.RelayConfig{SettleWait: 500 * time.Millisecond}, Push: push.Config{Lease: time.Second}}, false},
		{"external NATS", Config{DataDir: "d", NATSURL: "nats://x:4222", Relay: stream.RelayConfig{SettleWait: time.Hour}}, true},
		{"external NATS, --settle off", Config{DataDir: "d", NATSURL: "nats://x:4222", Settle: SettleOff, Relay: stream.RelayConfig{SettleWait: time.Hour}}, false},
	})
}

// Settling is on alone where no other node can join (a node joins through
// the NATS and needs the database too), and across nodes where one can,
// unless the nodes commit their own sends or an endpoint needs every event.
// --settle off and a negative wait turn it off anywhere; any other --settle
// is refused.
func TestSettleAloneOrAcrossNodes(t *testing.T) {
	const dsn, url, listen = "postgres://db/chatd", "nats://x:4222", "127.0.0.1:4222"
	tests := []struct {
		name    string
		cfg     Config
		want    bool // settles
		across  bool // with the other nodes
		wantErr bool
	}{
		{"embedded NATS and database", Config{DataDir: "d"}, true, false, false},
		{"embedded NATS without a listener, external database", Config{DataDir: "d", DatabaseURL: dsn}, true, false, false},
		{"listening embedded NATS, managed database", Config{DataDir: "d", NATSListen: listen}, true, false, false},
		{"listening embedded NATS, external database", Config{DataDir: "d", NATSListen: listen, DatabaseURL: dsn}, true, true, false},
		{"external NATS", Config{DataDir: "d", NATSURL: url}, true, true, false},
		{"external NATS, --forward-commits off", Config{DataDir: "d", NATSURL: url, Forward: ForwardOff}, false, false, false},
		{"external NATS, a webhook", Config{DataDir: "d", NATSURL: url, Webhook: webhook.Config{Endpoints: []webhook.Endpoint{{URL: "https://x.example/h"}}}}, false, false, false},
		{"external NATS, --settle off", Config{DataDir: "d", NATSURL: url, Settle: SettleOff}, false, false, false},
		{"--settle auto", Config{DataDir: "d", Settle: SettleAuto}, true, false, false},
		{"--settle off", Config{DataDir: "d", Settle: SettleOff}, false, false, false},
		{"negative wait", Config{DataDir: "d", Relay: stream.RelayConfig{SettleWait: -1}}, false, false, false},
		{"--settle sometimes", Config{DataDir: "d", Settle: "sometimes"}, false, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := tt.cfg
			err := cfg.setDefaults()
			if (err != nil) != tt.wantErr {
				t.Fatalf("got %v, want error %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			if off := cfg.settleOff(); (off == "") != tt.want || cfg.settlesAcross() != tt.across {
				t.Fatalf("settles: got %v (%q), across %v; want %v, across %v", off == "", off, cfg.settlesAcross(), tt.want, tt.across)
			}
		})
	}
}

// A presence refresh of half the TTL or more would let one late refresh
// make a live user look offline to the cluster: refused at start.
func TestPresenceRefreshMustBeUnderHalfTheTTL(t *testing.T) {
	tests := []struct {
		name    string
		ttl     time.Duration
		refresh time.Duration
		wantErr bool
	}{
		{"defaults", 0, 0, false},
		{"shorter TTL, default refresh", 4 * time.Second, 0, true},
		{"refresh exactly half", 4 * time.Second, 2 * time.Second, true},
		{"refresh under half", 4 * time.Second, time.Second, false},
		{"longer refresh, default TTL", 0, 5 * time.Second, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := Config{DataDir: "d", Presence: signal.PresenceConfig{TTL: tt.ttl, Refresh: tt.refresh}}
			err := cfg.setDefaults()
			if (err != nil) != tt.wantErr {
				t.Fatalf("got %v, want error %v", err, tt.wantErr)
			}
		})
	}
}

// A webhook needs every event in the stream: with one configured a
// settling node publishes settled messages too (under the taken subjects
// when every recipient took them live), and a node that does not settle
// has nothing to add.
func TestWebhookPublishesSettledMessages(t *testing.T) {
	c := Config{DataDir: "d", Relay: stream.RelayConfig{SettleWait: 200 * time.Millisecond},
		Webhook: webhook.Config{Endpoints: []webhook.Endpoint{{URL: "https://x.example/h"}}}}
	if err := c.setDefaults(); err != nil {
		t.Fatal(err)
	}
	if why := c.settleOff(); why != "" || !c.settlesTaken() {
		t.Fatalf("a single node with a webhook: settling off because %q, taken %v; want settling, taken apart", why, c.settlesTaken())
	}
	if got, want := c.takenSubjects(), c.streamSubjects()+"taken."; got != want || !strings.HasPrefix(c.liveSubjects(), c.streamSubjects()) {
		t.Fatalf("taken subjects %q, want %q", got, want)
	}
	c.NATSURL = "nats://x.example:4222"
	if c.settlesTaken() || c.settleOff() == "" {
		t.Fatal("with an external NATS and a webhook the node settles or publishes taken messages apart")
	}
	c.NATSURL, c.Webhook.Endpoints = "", nil
	if c.settlesTaken() {
		t.Fatal("without a webhook the node publishes taken messages apart rather than keeping them out")
	}
}

// Config.Forward is on when empty, and only on or off.
func TestForwardValues(t *testing.T) {
	for in, want := range map[string]string{"": ForwardOn, ForwardOn: ForwardOn, ForwardOff: ForwardOff} {
		c := Config{Forward: in}
		if err := c.setSettleDefaults(); err != nil || c.Forward != want {
			t.Fatalf("Forward %q: got %q (%v), want %q", in, c.Forward, err, want)
		}
	}
	c := Config{Forward: "sometimes"}
	if err := c.setSettleDefaults(); err == nil || !strings.Contains(err.Error(), `--forward-commits "sometimes": want on or off`) {
		t.Fatalf("Forward sometimes: %v, want it refused", err)
	}
}
