package stream

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/chatd/chatd/internal/logsample"
	"github.com/chatd/chatd/pkg/store"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
)

// Relay defaults.
const (
	DefaultRelayBatch     = 256
	DefaultPublishTimeout = time.Second
	DefaultStepDownAfter  = 5 * time.Second
	// connectedStepDownFactor stretches StepDownAfter while the link to
	// NATS is up but publishes fail. That is what a stream leader election
	// looks like, and it fails every node's relay alike: stepping down then
	// only delays the first publish once the new leader is there (measured:
	// live delivery came back seconds after the new leader instead of
	// within one; docs/benchmarks-log.md, "Failover: SIGKILL of the stream
	// leader under load (issue 8, item 18)"). A link that stays up while
	// publishes fail for this long is a partition the client has not
	// noticed, where another node may do better.
	connectedStepDownFactor = 6
)

// Retry backoff of a failed round. The cap stays well under a second so the
// relay resumes within about a second of the stream having a leader again
// (a retry is one read of a near-empty table and one publish).
const (
	backoffMin = 20 * time.Millisecond
	backoffMax = 250 * time.Millisecond
)

// Outbox is the PostgreSQL side the relay drains. *store.Store implements it.
type Outbox interface {
	ReadOutbox(ctx context.Context, limit int) ([]store.OutboxEntry, error)
	ReadOutboxIDs(ctx context.Context, limit int) ([]store.OutboxRef, error)
	ReadOutboxByID(ctx context.Context, ids []int64) ([]store.OutboxEntry, error)
	DeleteOutbox(ctx context.Context, ids []int64) (int64, error)
	SetAsideOutbox(ctx context.Context, id int64, reason string) error
	TryRelayLock(ctx context.Context) (*store.RelayLock, bool, error)
}

// RelayConfig configures a Relay. Zero values take the documented defaults.
type RelayConfig struct {
	// Outbox and JS are required. The relay publishes on JS's connection
	// with a publisher of its own (publisher.go): JS's publish options do
	// not apply; PublishTimeout and Batch bound the relay's publishes.
	Outbox Outbox
	JS     jetstream.JetStream
	// SubjectPrefix is the delivery stream's subject prefix (see
	// Config.SubjectPrefix); a message of chat C goes to SubjectPrefix+C.
	// Empty means SubjectPrefix, the package constant.
	SubjectPrefix string
	// Batch is how many outbox rows one round publishes, and the most
	// publishes the relay has outstanding. Zero means 256.
	Batch int
	// Poll is the fallback wake-up when no commit signal arrives. Zero means 1 s.
	Poll time.Duration
	// Standby is how often a relay without the lock tries to take it over.
	// Zero means 2 s.
	Standby time.Duration
	// PublishTimeout bounds the wait for one publish's ack, and so for one
	// round. A round during a stream leader election gets no answer; a
	// short bound makes it fail fast and retry. Zero means 1 s.
	PublishTimeout time.Duration
	// StepDownAfter is how long publishing may keep failing while this
	// node's link to NATS is down before the relay releases its lock and
	// stands by, so the relay of a node that can reach NATS takes over.
	// With the link up (the stream not answering, as in a leader election)
	// the bound is six times longer. Zero means DefaultStepDownAfter.
	StepDownAfter time.Duration
	// Hold is how many committed entries (see Offer) the relay keeps in
	// memory while it leads; offers beyond it are dropped and their rows
	// read back from PostgreSQL. Zero means DefaultHold; negative holds
	// nothing (every row is read back, as before the hand-off).
	Hold int
	// WakeSubject is the core NATS subject on which the nodes sharing the
	// database announce their commits to the leading relay: Wake publishes
	// on it while another node's relay leads, and Run listens on it. It is
	// NATS rather than PostgreSQL's NOTIFY because PostgreSQL serializes
	// every notifying transaction through its commit's WAL flush, on one
	// lock for the whole server: nodes committing at once lost their group
	// commit (docs/benchmarks-log.md, "The cluster's commits queued on
	// PostgreSQL's notification lock"). An announcement lost (NATS down, a
	// slow subscriber) costs a Poll of latency, never a row. Empty: no
	// announcements; each relay is woken by its own node's commits and Poll.
	WakeSubject string
	// NodeID names this node in its announcements. The relay ignores its
	// own: they were sent before it led, and this node's commits are
	// handed to it with Offer and Wake.
	NodeID string
	// Settler, on a single node only, keeps messages its connections have
	// all acked out of the stream (settle.go): the relay deletes their rows
	// without publishing them. Never with other nodes: their connections
	// need every message in the stream. Nil: every row is published.
	Settler Settler
	// TakenPrefix, with a Settler, publishes settled messages rather than
	// keeping them out of the stream: those every recipient took live
	// under TakenPrefix+chat, where the webhooks read them and live
	// delivery and the notifier, whose consumers filter on SubjectPrefix+*,
	// do not; the others under SubjectPrefix+chat, as unsettled ones.
	// Empty: settled messages are kept out of the stream.
	TakenPrefix string
	// SettleWait is how long after its commit an unsettled message may wait
	// for its acks before it is published. Zero means DefaultSettleWait.
	SettleWait time.Duration
	// OnLead, if set, is told on Run's goroutine when this relay takes the
	// lead (true) and when it leaves it (false); it must not block.
	OnLead func(leading bool)
	// Now is the clock for lag metrics, the settle wait and the step-down timer. Nil means time.Now.
	Now        func() time.Time
	Logger     *slog.Logger
	Registerer prometheus.Registerer
}

func (c *RelayConfig) setDefaults() error {
	if c.Outbox == nil || c.JS == nil {
		return errors.New("stream: RelayConfig.Outbox and JS are required")
	}
	if c.SubjectPrefix == "" {
		c.SubjectPrefix = SubjectPrefix
	}
	if c.Batch <= 0 {
		c.Batch = DefaultRelayBatch
	}
	if c.Poll <= 0 {
		c.Poll = time.Second
	}
	if c.Standby <= 0 {
		c.Standby = 2 * time.Second
	}
	if c.PublishTimeout <= 0 {
		c.PublishTimeout = DefaultPublishTimeout
	}
	if c.StepDownAfter <= 0 {
		c.StepDownAfter = DefaultStepDownAfter
	}
	if c.SettleWait <= 0 {
		c.SettleWait = DefaultSettleWait
	}
	if c.Hold == 0 {
		c.Hold = DefaultHold
	}
	if c.Hold < 0 {
		c.Hold = 0
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return nil
}

// Relay moves committed outbox rows into the delivery stream. Exactly one
// relay per database is active (a PostgreSQL advisory lock elects it); the
// others stand by and take over when the leader's session ends or the
// leader steps down because it cannot publish.
type Relay struct {
	cfg     RelayConfig
	log     *slog.Logger
	sampled *logsample.Sampler // for what can repeat every round
	nc      *nats.Conn
	pub     *publisher
	wake    chan struct{}
	wakeMsg []byte // NodeID, the payload of this node's announcements
	held    *held  // this node's commits, handed over while it leads
	metrics *relayMetrics
	active  atomic.Bool
	// cut is set when the last round stopped at a message still waiting
	// for its acks (settle.go), and sent holds the outbox ids handed to
	// the stream whose rows are not deleted yet (with a Settler only; on
	// one node no other relay deletes them, so each leaves once this one
	// does). Only the leading goroutine touches them.
	cut  bool
	sent map[int64]fate
}

// NewRelay returns a Relay; call Run.
func NewRelay(cfg RelayConfig) (*Relay, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	nc := cfg.JS.Conn()
	pub := newPublisher(nc)
	log := cfg.Logger.With("component", "relay")
	h := newHeld(cfg.Hold)
	return &Relay{
		cfg: cfg, log: log, nc: nc, pub: pub, held: h, sent: make(map[int64]fate),
		sampled: logsample.New(log, logsample.Config{Now: cfg.Now}),
		wake:    make(chan struct{}, 1), wakeMsg: []byte(cfg.NodeID),
		metrics: newRelayMetrics(cfg.Registerer, h),
	}, nil
}

// Active reports whether this relay holds the relay lock right now.
func (r *Relay) Active() bool { return r.active.Load() }

// PublishAsyncPending is how many of the relay's publishes await their ack
// (at most Batch; zero between rounds).
func (r *Relay) PublishAsyncPending() int { return r.pub.pending() }

// Wake tells the relay that this node committed rows, after Offer. While
// another node's relay leads, it announces the commit to that relay on
// WakeSubject. It never blocks on I/O.
func (r *Relay) Wake() {
	if r.cfg.WakeSubject != "" && !r.active.Load() {
		if err := r.nc.Publish(r.cfg.WakeSubject, r.wakeMsg); err != nil {
			r.sampled.Warn("announce a commit to the leading relay failed; it finds the rows at its next poll",
				"err", err, "poll", r.cfg.Poll)
		}
	}
	r.signal()
}

// signal ends the leading relay's idle wait. It never blocks.
func (r *Relay) signal() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// announced is the handler of another node's commit announcement; its
// payload is that node's id. This node's own are ignored: they were
// announced before this relay led, and Offer and Wake hand it the rows.
func (r *Relay) announced(m *nats.Msg) {
	if len(m.Data) > 0 && string(m.Data) == r.cfg.NodeID {
		return
	}
	r.signal()
}

// Offer hands the relay the entries of a batch this node just committed, so
// that it publishes them without reading them back from PostgreSQL. Call it
// after the commit, before Wake. It keeps them only while this relay leads
// and up to RelayConfig.Hold; whatever it does not keep is read from the
// outbox as any other node's rows are. It never blocks on I/O and does not
// modify batch.
//
// The relay publishes a held message as it was committed. If it is edited
// or deleted before the relay gets to it, reading it back would publish its
// current state instead (the new body, or an empty one once deleted); the
// held version is what the fast path already sent to this node's
// recipients, and the edit or deletion is an event of its own, later in the
// same chat's order, that every recipient applies after it.
func (r *Relay) Offer(batch []store.Accepted) {
	_, dropped := r.held.offer(batch, r.cfg.Now())
	if dropped > 0 {
		r.metrics.holdDropped.Add(float64(dropped))
	}
}
