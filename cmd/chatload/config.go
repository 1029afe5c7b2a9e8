package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/chatd/chatd/pkg/node"
)

// Scenarios.
const (
	scenarioPairs  = "pairs"
	scenarioGroups = "groups"
	scenarioIdle   = "idle"
	scenarioMixed  = "mixed"
)

// Orders of the pairs scenario's sends.
const (
	pairsSpread   = "spread"
	pairsCrossing = "crossing"
)

// Config is one load run. Zero values take the defaults documented on each
// field (set by registerFlags for the command, by setDefaults for tests).
type Config struct {
	// Scenario is pairs, groups, mixed or idle. Zero: pairs.
	Scenario string
	// PairsOrder is the order of the pairs scenario's sends in each round
	// over the clients: spread (every pair's first member, then every
	// second member, so partners send half a round apart) or crossing
	// (the two members of a pair back to back). Zero: spread.
	PairsOrder string
	// Clients is the number of client connections (each its own user with
	// device "load"). Zero: 100; in groups and mixed, zero means
	// Groups·Members (each client in one group); fewer clients than that
	// spread over the groups.
	Clients int
	// Groups and Members shape the groups and mixed scenarios. Zero: 10 and
	// 10 for groups, 100 and 6 for mixed.
	Groups, Members int
	// Mix weighs the actions of a mixed turn, "send=50,edit=15,..." over
	// send, edit, delete, react and read (see mixed.go). Zero: defaultMix.
	Mix string
	// MetaPct of mixed sends carry meta. Zero: none; the flag defaults to 30.
	MetaPct float64
	// TypingRate is the total of typing signals per second in mixed, spread
	// over random clients and their chats. Zero: one per client per 5 s;
	// negative: none.
	TypingRate float64
	// Rate is the total target of sends (mixed: turns) per second, paced
	// evenly over the senders. Zero sends nothing.
	Rate float64
	// Duration is the measured load after Warmup; Warmup runs the same load
	// but is left out of rates and latencies (reconciliation covers both).
	Duration, Warmup time.Duration
	// StallPct of the clients stop consuming (and so acking) for StallFor at
	// random times; DropPct drop their TCP connection about every DropEvery.
	StallPct, DropPct   float64
	StallFor, DropEvery time.Duration
	// BodyBytes is each message's body size. Zero: 64.
	BodyBytes int
	// Drain bounds the wait after the load for every recipient to hold every
	// accepted message and the outbox to empty. Zero: 30 s.
	Drain time.Duration
	// ConnectRate bounds new connections per second during setup. Zero: 500.
	ConnectRate int

	// PoisonPct and TypingFloodPct of the clients are bad clients (see
	// abuse.go), taken from Clients: the rest are the good clients, who
	// make the scenario and carry Rate. Zero: none. With any bad client a
	// good send refused for any reason fails the run, as a loss does.
	PoisonPct, TypingFloodPct float64
	// PoisonRate is each poison client's frames per second. Zero: 20.
	PoisonRate float64
	// PoisonMix weighs the poison kinds, "nul=8,oversize=1,garbage=1".
	// Zero: defaultPoisonMix.
	PoisonMix string
	// TypingFloodRate is each flooding client's typing frames per second.
	// Zero: as fast as the connection takes them.
	TypingFloodRate float64
	// Baseline is the JSON report of the same run without bad clients;
	// when set, the good clients' live-delivery p99 must stay within
	// BaselineFactor of its. Zero: no comparison.
	Baseline string
	// BaselineFactor is how far the live p99 may rise over --baseline's.
	// Zero: 2.
	BaselineFactor float64

	// WebhookReceivers are webhook endpoints chatload serves during the run
	// (hookSpec's form: ADDR[,fail-pct=N][,down-at=D,down-for=D][,down=refuse|503]);
	// after the drain it waits up to WebhookWait until each holds every
	// accepted event, and a lost or misordered event fails the run. The
	// target must post to them (chatd --webhook http://ADDR/...). Zero: none.
	WebhookReceivers []string
	// WebhookSecret is the target's whsec_ secret, to verify signatures.
	WebhookSecret string
	// WebhookWait bounds the wait for the receivers after the drain.
	// Zero: 5 min.
	WebhookWait  time.Duration
	webhookSpecs []hookSpec // WebhookReceivers parsed by setDefaults
	// tuneNode, if set, adjusts the embedded node's config (tests point its
	// webhooks at the receivers).
	tuneNode func(*node.Config)

	// URL targets a running chatd; empty starts one in-process (embedded).
	// A comma-separated list targets several nodes of one cluster: client i
	// connects to the (i mod n)-th, so the two clients of a pair sit on
	// different nodes and every message crosses the relay and the stream
	// (one node would deliver them all on its fast path). When a client's
	// session ends it dials the next node in the list, as a load balancer
	// would, so a node can be killed under load. The first node serves the
	// outbox view and the metrics.
	URL string
	// DataDir is the embedded node's data dir (zero: a fresh temporary dir,
	// removed afterwards), or with URL the target's data dir to read its
	// generated JWT secret from.
	DataDir string
	// JWTSecret signs the load's tokens (with URL: the target's secret).
	JWTSecret string
	// AdminUser is a user in the target's AdminUsers, for the outbox view.
	// Zero: chatload-admin (the embedded node is configured with it).
	AdminUser string
	// PIDs are separate chatd processes to sample RSS and CPU of, summed
	// (the nodes of a cluster on this machine).
	PIDs []int
	// Lease, MaxAttempts, MaxPending and Grace tune the embedded node
	// (zero: chatd's defaults).
	Lease       time.Duration
	MaxAttempts int
	MaxPending  int
	Grace       time.Duration
	// ProcessCost is the CPU each client's app spends on every message it
	// is handed, before it takes the next (app.go). Zero: none.
	ProcessCost time.Duration
	// ReadAhead is how many deliveries a client's SDK reads, and acks,
	// ahead of its app (client.Config.EventBuffer). 1: acks follow the
	// app's processing. Zero: 16.
	ReadAhead int
	// AuditEvery is about how often each client reads the tail of its
	// chat's history over REST during the load. Zero: never.
	AuditEvery time.Duration
	// AckDelay is each client's ack batching window (client.Config.AckDelay):
	// 0 acks every delivery at once, as a client without batching does.
	AckDelay time.Duration

	mix           mixWeights    // Mix parsed by setDefaults
	poisonMix     poisonWeights // PoisonMix parsed by setDefaults
	poisonClients int           // of Clients, from PoisonPct
	floodClients  int           // of Clients, from TypingFloodPct

	// JSONPath and HTMLPath receive the report when set.
	JSONPath, HTMLPath string
	// Progress is the interval of the progress line. Zero: 5 s; negative: none.
	Progress time.Duration
	// Out receives the progress lines and the text report. Zero: io.Discard.
	Out io.Writer
	// Logger receives chatload's and the embedded node's logs.
	// Zero: slog.Default().
	Logger *slog.Logger
}

func (c *Config) setDefaults() error {
	if c.Scenario == "" {
		c.Scenario = scenarioPairs
	}
	if c.Scenario == scenarioMixed {
		setZero(&c.Groups, 100)
		setZero(&c.Members, 6)
	}
	setZero(&c.Groups, 10)
	setZero(&c.Members, 10)
	switch c.Scenario {
	case scenarioPairs, scenarioIdle:
		setZero(&c.Clients, 100)
	case scenarioGroups, scenarioMixed:
		setZero(&c.Clients, c.Groups*c.Members)
	default:
		return fmt.Errorf("unknown scenario %q (want pairs, groups, mixed or idle)", c.Scenario)
	}
	switch c.PairsOrder {
	case "":
		c.PairsOrder = pairsSpread
	case pairsSpread, pairsCrossing:
	default:
		return fmt.Errorf("unknown --pairs-order %q (want spread or crossing)", c.PairsOrder)
	}
	if c.Mix == "" {
		c.Mix = defaultMix
	}
	c.poisonClients = badShare(c.Clients, c.PoisonPct)
	c.floodClients = badShare(c.Clients, c.TypingFloodPct)
	if c.TypingRate == 0 {
		c.TypingRate = float64(c.goodClients()) / 5
	}
	mix, err := parseMix(c.Mix)
	if err != nil {
		return err
	}
	c.mix = mix
	if c.PoisonMix == "" {
		c.PoisonMix = defaultPoisonMix
	}
	if c.poisonMix, err = parsePoisonMix(c.PoisonMix); err != nil {
		return err
	}
	if c.PoisonRate == 0 {
		c.PoisonRate = 20
	}
	for _, spec := range c.WebhookReceivers {
		sp, err := parseHookSpec(spec)
		if err != nil {
			return err
		}
		c.webhookSpecs = append(c.webhookSpecs, sp)
	}
	if c.WebhookWait <= 0 {
		c.WebhookWait = 5 * time.Minute
	}
	if c.BaselineFactor <= 0 {
		c.BaselineFactor = baselineFactor
	}
	setZero(&c.BodyBytes, 64)
	setZero(&c.ReadAhead, 16)
	setZero(&c.ConnectRate, 500)
	if c.Drain <= 0 {
		c.Drain = 30 * time.Second
	}
	if c.StallFor <= 0 {
		c.StallFor = 10 * time.Second
	}
	if c.DropEvery <= 0 {
		c.DropEvery = 5 * time.Second
	}
	if c.Progress == 0 {
		c.Progress = 5 * time.Second
	}
	if c.AdminUser == "" {
		c.AdminUser = "chatload-admin"
	}
	if c.Out == nil {
		c.Out = io.Discard
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c.validate()
}

// goodClients is the number of clients that make the scenario: all but
// the bad ones.
func (c *Config) goodClients() int { return c.Clients - c.poisonClients - c.floodClients }

func (c *Config) validate() error {
	var errs []error
	good := c.goodClients()
	if c.Scenario == scenarioPairs && (good < 2 || good%2 != 0) {
		errs = append(errs, fmt.Errorf("pairs needs an even number of good clients ≥ 2, got %d (%d clients, %d poison, %d typing flood)",
			good, c.Clients, c.poisonClients, c.floodClients))
	}
	if (c.Scenario == scenarioGroups || c.Scenario == scenarioMixed) && (c.Members < 2 || good < c.Members) {
		errs = append(errs, fmt.Errorf("%s needs ≥ 2 members and good clients ≥ members, got %d members, %d good clients", c.Scenario, c.Members, good))
	}
	if c.PoisonPct < 0 || c.TypingFloodPct < 0 || c.PoisonPct+c.TypingFloodPct > 100 {
		errs = append(errs, errors.New("poison-pct and typing-flood-pct are percentages (0–100 together)"))
	}
	if c.PoisonRate < 0 || c.TypingFloodRate < 0 {
		errs = append(errs, errors.New("poison-rate and typing-flood-rate must be ≥ 0"))
	}
	if c.ProcessCost < 0 || c.ReadAhead < 0 || c.AuditEvery < 0 {
		errs = append(errs, errors.New("process-cost, read-ahead and audit-every must be ≥ 0"))
	}
	if c.Rate < 0 || c.Duration <= 0 || c.Warmup < 0 {
		errs = append(errs, errors.New("rate must be ≥ 0 and duration > 0, warmup ≥ 0"))
	}
	if c.MetaPct < 0 || c.MetaPct > 100 {
		errs = append(errs, errors.New("meta-pct is a percentage (0–100)"))
	}
	if c.StallPct < 0 || c.StallPct > 100 || c.DropPct < 0 || c.DropPct > 100 {
		errs = append(errs, errors.New("stall-pct and drop-pct are percentages (0–100)"))
	}
	return errors.Join(errs...)
}

func setZero(p *int, def int) {
	if *p == 0 {
		*p = def
	}
}

// registerFlags binds the command line to c. Secrets may also come from the
// environment (CHATD_JWT_SECRET) so they stay out of shell history.
func registerFlags(fs *flag.FlagSet, c *Config) *bool {
	fs.StringVar(&c.Scenario, "scenario", scenarioPairs, "pairs | groups | mixed | idle")
	fs.StringVar(&c.PairsOrder, "pairs-order", pairsSpread, "pairs: spread (partners send half a round apart) | crossing (partners send back to back, so one node answers a send and delivers the partner's in one write)")
	fs.IntVar(&c.Clients, "clients", 0, "client connections (default 100; groups, mixed: groups×members)")
	fs.IntVar(&c.Groups, "groups", 0, "groups (groups scenario: default 10; mixed: 100)")
	fs.IntVar(&c.Members, "members", 0, "members per group (groups scenario: default 10; mixed: 6)")
	fs.StringVar(&c.Mix, "mix", defaultMix, "mixed: weights of each turn's action over send, edit, delete, react, read")
	fs.Float64Var(&c.MetaPct, "meta-pct", 30, "mixed: percent of sends that carry meta")
	fs.Float64Var(&c.TypingRate, "typing-rate", 0, "mixed: typing signals per second in total (default clients/5; negative: none)")
	fs.Float64Var(&c.Rate, "rate", 100, "total target sends (mixed: turns) per second, paced evenly over the senders")
	fs.DurationVar(&c.Duration, "duration", 30*time.Second, "measured load duration (after warm-up)")
	fs.DurationVar(&c.Warmup, "warmup", 0, "warm-up at the same rate, left out of rates and latencies")
	fs.Float64Var(&c.StallPct, "stall-pct", 0, "percent of clients that stop acking for --stall-for at random times")
	fs.DurationVar(&c.StallFor, "stall-for", 10*time.Second, "length of each stall")
	fs.Float64Var(&c.DropPct, "drop-pct", 0, "percent of clients that drop their connection at random times")
	fs.DurationVar(&c.DropEvery, "drop-every", 5*time.Second, "mean interval between a dropping client's drops")
	fs.Float64Var(&c.PoisonPct, "poison-pct", 0, "percent of --clients that send only poison: NUL bodies, oversize bodies, garbage frames")
	fs.Float64Var(&c.PoisonRate, "poison-rate", 20, "poison frames per second per poison client")
	fs.StringVar(&c.PoisonMix, "poison-mix", defaultPoisonMix, "weights of the poison kinds")
	fs.Float64Var(&c.TypingFloodPct, "typing-flood-pct", 0, "percent of --clients that flood typing frames over many chat ids, most not theirs")
	fs.Float64Var(&c.TypingFloodRate, "typing-flood-rate", 0, "typing frames per second per flooding client (default: as fast as chatd reads)")
	fs.StringVar(&c.Baseline, "baseline", "", "JSON report of the same run without bad clients (or webhooks): fail if live p99 is over --baseline-factor × its")
	fs.Float64Var(&c.BaselineFactor, "baseline-factor", baselineFactor, "with --baseline: the largest live p99 ratio that passes")
	fs.Func("webhook-receiver", "serve a webhook endpoint at ADDR[,fail-pct=N][,down-at=D,down-for=D][,down=refuse|503] (repeatable); chatd must post to it (--webhook http://ADDR/...); after the drain wait until it has every accepted event, in per-chat order", func(s string) error {
		c.WebhookReceivers = append(c.WebhookReceivers, s)
		return nil
	})
	fs.StringVar(&c.WebhookSecret, "webhook-secret", os.Getenv("CHATD_WEBHOOK_SECRET"), "the target's whsec_ webhook secret, to verify signatures (env CHATD_WEBHOOK_SECRET)")
	fs.DurationVar(&c.WebhookWait, "webhook-wait", 5*time.Minute, "how long to wait after the drain for every webhook receiver to hold every accepted event")
	fs.DurationVar(&c.AckDelay, "ack-delay", 50*time.Millisecond, "how long a client collects delivered ids before one ack frame (the Go SDK's default); 0: an ack frame per delivery, as a client without batching sends")
	fs.DurationVar(&c.ProcessCost, "process-cost", 0, "CPU each client's app spends on every message it is handed (a busy loop) before it takes the next")
	fs.IntVar(&c.ReadAhead, "read-ahead", 16, "deliveries a client's SDK reads and acks ahead of its app; 1: acks follow the app's processing")
	fs.DurationVar(&c.AuditEvery, "audit-every", 0, "each client reads its chat's latest history page over REST about this often during the load (0: never)")
	fs.IntVar(&c.BodyBytes, "body-bytes", 64, "message body size")
	fs.DurationVar(&c.Drain, "drain", 30*time.Second, "how long to wait after the load for delivery and the outbox to drain")
	fs.IntVar(&c.ConnectRate, "connect-rate", 500, "new connections per second during setup")
	fs.StringVar(&c.URL, "url", "", "target chatd base URL, or several nodes' comma-separated (clients spread over them; default: start chatd in-process)")
	embedded := fs.Bool("embedded", false, "start chatd in-process (the default when --url is empty)")
	fs.StringVar(&c.DataDir, "data-dir", "", "embedded: data dir (default: a temporary one); with --url: the target's data dir, to read its JWT secret")
	fs.StringVar(&c.JWTSecret, "jwt-secret", os.Getenv("CHATD_JWT_SECRET"), "target's JWT secret (env CHATD_JWT_SECRET)")
	fs.StringVar(&c.AdminUser, "admin-user", "chatload-admin", "a user in the target's --admin-users, to poll /api/admin/outbox")
	fs.Func("pid", "pid of a separate chatd process to sample RSS and CPU from /proc; several comma-separated (a cluster's nodes) are summed", func(v string) error {
		for _, f := range strings.Split(v, ",") {
			pid, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || pid <= 0 {
				return fmt.Errorf("want process ids, comma-separated: %q", f)
			}
			c.PIDs = append(c.PIDs, pid)
		}
		return nil
	})
	fs.DurationVar(&c.Lease, "lease", 0, "embedded chatd: claim lease (default chatd's)")
	fs.IntVar(&c.MaxAttempts, "max-attempts", 0, "embedded chatd: max delivery attempts (default chatd's)")
	fs.IntVar(&c.MaxPending, "max-pending", 0, "embedded chatd: max un-acked per connection (default chatd's)")
	fs.DurationVar(&c.Grace, "grace", 0, "embedded chatd: reconnect grace (default chatd's)")
	fs.StringVar(&c.JSONPath, "json", "", "write the report as JSON to this file")
	fs.StringVar(&c.HTMLPath, "html", "", "write a self-contained HTML report to this file")
	fs.DurationVar(&c.Progress, "progress", 5*time.Second, "progress line interval (negative: none)")
	return embedded
}
