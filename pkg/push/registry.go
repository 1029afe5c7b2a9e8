package push

import (
	"log/slog"
	"sync"
	"time"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/internal/logsample"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// session is one registered connection and its delivery bookkeeping.
// All fields are guarded by Registry.mu.
type session struct {
	conn     Conn
	attached time.Time
	// pending holds the stream messages this connection waits for and has
	// not acked: sent, or held back by pacing (pace.go).
	pending pendingSet
	// inflight counts frames handed and not acked: fast-path frames not yet
	// acked and pending messages that were sent. It is paced to MaxPending.
	inflight int
	// held lists pending messages not sent yet, oldest first (entries acked
	// since are skipped when released); nheld counts those still held.
	held  []*delivery
	nheld int
	// fast remembers messages handed over by the fast path before their
	// stream message arrived, so the stream delivery neither re-sends them
	// nor waits for an ack that already came.
	fast map[string]fastEntry
}

type fastEntry struct {
	at    time.Time
	m     *chatd.Message // the fast path's copy, for Config.Acked
	acked bool
	// counted: the session is among those a settle entry waits for, so
	// its ack or withdrawal counts that entry down (settle.go).
	counted bool
}

// delivery is one stream message this node is delivering: the recipients
// still owing an ack, and the JetStream message to ack when none is left.
type delivery struct {
	seq uint64
	msg jetstream.Msg
	m   Outgoing // handed to connections as &m
	// waiting maps each recipient still owing an ack to whether the
	// message is held for it (not sent yet, pace.go).
	waiting map[*session]bool
	sentAt  time.Time
	// final is set once the last attempt went out: when it passes with
	// recipients still waiting, they are abandoned.
	final time.Time
}

// Registry is the node's one registry of live connections and its
// live-delivery state: one active session per (user, device), the sessions
// of each user (for fan-out, and for pkg/api's signals and presence), each
// connection's pending set, and the stream messages in flight. It is safe
// for concurrent use. pkg/api attaches, detaches, acks and looks up
// connections; the consumer (Run) and the fast path feed it messages.
type Registry struct {
	cfg Config
	log *slog.Logger
	// sampled logs what can repeat for every message (a NATS outage).
	sampled *logsample.Sampler
	metrics *metrics

	mu         sync.Mutex
	sessions   map[sessionKey]*session
	byUser     map[string][]*session
	deliveries map[string]*delivery // by message id
	finals     map[*delivery]struct{}
	// unwritten are the connections handed frames since the lock was
	// taken; unlock writes them (handoff.go).
	unwritten []Conn
	// streamFirst remembers messages whose stream delivery reached a local
	// recipient before the fast path did (the relay can be woken by the
	// commit's NOTIFY before ingest runs the fast path). The fast path then
	// skips them even if every recipient has acked already and the delivery
	// is gone. Rare, so small; pruned by Reap after FastMemory.
	streamFirst map[string]time.Time
	// settle is the single-node settle state (settle.go).
	settle settling
	// follow holds the subscriptions to the leading node's shares.
	follow follower
	// shareBufs holds the buffers Share encodes a commit's messages into.
	shareBufs sync.Pool
	// health gates Attach: sessions register only while the consumer is
	// live (see Ready).
	health health
	// live is closed the first time health turns healthLive (see Live).
	live chan struct{}
	// unreachableSince is when consumer checks began failing; zero while
	// they succeed.
	unreachableSince time.Time
}

type sessionKey struct{ user, device string }

// New returns a Registry. Call Run to consume the delivery stream.
func New(cfg Config) (*Registry, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	m := newMetrics(cfg.Registerer)
	log := cfg.Logger.With("component", "push", "node", cfg.NodeID)
	r := &Registry{
		cfg:        cfg,
		log:        log,
		sampled:    logsample.New(log, logsample.Config{}),
		metrics:    m,
		sessions:   make(map[sessionKey]*session),
		byUser:     make(map[string][]*session),
		deliveries: make(map[string]*delivery),
		finals:     make(map[*delivery]struct{}),

		streamFirst: make(map[string]time.Time),
		settle:      newSettling(cfg.Settle),
		shareBufs:   sync.Pool{New: func() any { return new([]byte) }},
		live:        make(chan struct{}),
	}
	if cfg.JS == nil {
		r.health = healthLive // fast path only: no consumer to wait for
		close(r.live)
	}
	if cfg.Settle {
		promauto.With(cfg.Registerer).NewGaugeFunc(prometheus.GaugeOpts{
			Name: "chatd_push_settle_accounts",
			Help: "Messages whose fast-path account this node keeps for settling; in steady traffic about a settle wait's worth.",
		}, r.settleAccounts)
	}
	return r, nil
}

func (r *Registry) settleAccounts() float64 {
	r.mu.Lock()
	defer r.unlock()
	return float64(len(r.settle.local))
}

// Attach registers c for live delivery. An older session of the same user
// and device is withdrawn and closed as superseded first, so at most one
// session per (user, device) is ever registered. Anything committed after
// Attach returns nil reaches c live (the gateway sends `hello` only
// afterwards). While the consumer is not live it registers nothing and
// returns the error Ready would (checked under the same lock that takes the
// registry out of live, so no session slips into the gap).
func (r *Registry) Attach(c Conn) error {
	key := sessionKey{c.User(), c.Device()}
	r.mu.Lock()
	if err := r.readyLocked(); err != nil {
		r.unlock()
		return err
	}
	old := r.sessions[key]
	var acks []jetstream.Msg
	if old != nil {
		acks = r.withdrawLocked(old)
	}
	s := &session{conn: c, attached: r.cfg.Now(), pending: make(pendingSet), fast: make(map[string]fastEntry)}
	r.sessions[key] = s
	r.byUser[key.user] = append(r.byUser[key.user], s)
	if len(r.byUser[key.user]) == 1 && old == nil {
		c.UserPresent(true)
	}
	r.unlock()
	r.metrics.connections.Inc()
	r.ackAll(acks)
	if old != nil {
		r.metrics.withdrawn.WithLabelValues(ReasonSuperseded.String()).Inc()
		old.conn.Close(ReasonSuperseded)
	}
	return nil
}

// Detach withdraws c from live delivery after its connection ended. It is a
// no-op when c is no longer the registered session (it was superseded or
// withdrawn already): the connection object is the session's epoch.
func (r *Registry) Detach(c Conn) {
	r.mu.Lock()
	s := r.currentLocked(c)
	var acks []jetstream.Msg
	if s != nil {
		acks = r.leaveLocked(s)
	}
	r.unlock()
	r.ackAll(acks)
}

// Withdraw removes c from live delivery for reason and closes it. Like
// Detach it does nothing when c is no longer the registered session, so a
// verdict reached against a superseded connection cannot touch its successor.
// It reports whether c was withdrawn.
func (r *Registry) Withdraw(c Conn, reason Reason) bool {
	r.mu.Lock()
	s := r.currentLocked(c)
	var acks []jetstream.Msg
	if s != nil {
		acks = r.leaveLocked(s)
	}
	r.unlock()
	if s == nil {
		return false
	}
	r.ackAll(acks)
	r.metrics.withdrawn.WithLabelValues(reason.String()).Inc()
	c.Close(reason)
	return true
}

// currentLocked returns c's session when c is the registered one.
func (r *Registry) currentLocked(c Conn) *session {
	s := r.sessions[sessionKey{c.User(), c.Device()}]
	if s == nil || s.conn != c {
		return nil
	}
	return s
}

// leaveLocked withdraws s (withdrawLocked) and tells its connection when
// it was its user's last.
func (r *Registry) leaveLocked(s *session) []jetstream.Msg {
	acks := r.withdrawLocked(s)
	if len(r.byUser[s.conn.User()]) == 0 {
		s.conn.UserPresent(false)
	}
	return acks
}

// withdrawLocked unregisters s and drops its whole pending set. It is a
// withdrawal, never an ack on the client's behalf: the stream message is
// acked only when no other local recipient still waits for it, and the
// withdrawn client recovers from history (docs/architecture.md, invariants
// 2 and 3). It returns the stream messages that became fully done, to ack
// outside the lock.
func (r *Registry) withdrawLocked(s *session) []jetstream.Msg {
	key := sessionKey{s.conn.User(), s.conn.Device()}
	delete(r.sessions, key)
	list := r.byUser[key.user]
	for i, other := range list {
		if other == s {
			list[i] = list[len(list)-1]
			list[len(list)-1] = nil
			list = list[:len(list)-1]
			break
		}
	}
	if len(list) == 0 {
		delete(r.byUser, key.user)
	} else {
		r.byUser[key.user] = list
	}
	var acks []jetstream.Msg
	for _, d := range s.pending {
		if d.waiting[s] {
			r.metrics.held.Dec()
		}
		delete(d.waiting, s)
		if len(d.waiting) == 0 {
			acks = append(acks, r.finishLocked(d))
		}
	}
	s.pending, s.held, s.nheld, s.inflight = nil, nil, 0, 0
	for id, fe := range s.fast {
		if !fe.acked && fe.counted {
			r.settle.done(id)
		}
	}
	s.fast = nil
	r.metrics.connections.Dec()
	return acks
}

// finishLocked forgets a delivery nobody waits for and returns its stream
// message for acking.
func (r *Registry) finishLocked(d *delivery) jetstream.Msg {
	delete(r.deliveries, d.m.ID)
	delete(r.finals, d)
	return d.msg
}

func (r *Registry) ackAll(msgs []jetstream.Msg) {
	for _, m := range msgs {
		if err := m.Ack(); err != nil {
			r.sampled.Warn(ackFailed, "err", err)
		}
	}
}

// Pin is one connection's lowest un-acked stream sequence.
type Pin struct {
	User   string `json:"user"`
	Device string `json:"device"`
	Seq    uint64 `json:"seq"`
}

// Pins returns the pin of every connection holding un-acked messages, for
// reclaim's floor and the admin view.
func (r *Registry) Pins() []Pin {
	r.mu.Lock()
	defer r.unlock()
	var pins []Pin
	for key, s := range r.sessions {
		if seq, ok := s.pending.pin(); ok {
			pins = append(pins, Pin{User: key.user, Device: key.device, Seq: seq})
		}
	}
	return pins
}

// Conns returns the connections registered on this node for the users
// listed, user by user, under one hold of the lock every delivery takes.
func (r *Registry) Conns(users ...string) []Conn {
	r.mu.Lock()
	defer r.unlock()
	var out []Conn
	for _, user := range users {
		for _, s := range r.byUser[user] {
			out = append(out, s.conn)
		}
	}
	return out
}

// AllConns returns every registered connection.
func (r *Registry) AllConns() []Conn {
	r.mu.Lock()
	defer r.unlock()
	out := make([]Conn, 0, len(r.sessions))
	for _, s := range r.sessions {
		out = append(out, s.conn)
	}
	return out
}

// Connections returns how many sessions are registered.
func (r *Registry) Connections() int {
	r.mu.Lock()
	defer r.unlock()
	return len(r.sessions)
}

// PinSeqs returns the pins alone, for reclaim's floor.
func (r *Registry) PinSeqs() []uint64 {
	pins := r.Pins()
	seqs := make([]uint64, len(pins))
	for i, p := range pins {
		seqs[i] = p.Seq
	}
	return seqs
}

// Reset withdraws every connection after the delivery stream's sequences
// went backwards: the pins and in-flight deliveries refer to sequences that
// no longer exist, so they cannot be trusted. The clients reconnect and
// resync from history, which is untouched; nothing is lost (G3).
func (r *Registry) Reset() {
	r.withdrawAll(ReasonAbandoned)
	r.forgetDeliveries()
}
