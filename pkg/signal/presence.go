package signal

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/internal/logsample"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/oklog/ulid/v2"
	"github.com/prometheus/client_golang/prometheus"
)

// Presence defaults (docs/operations.md): a node's heartbeat lives
// DefaultPresenceTTL after it was last written, and nodes write theirs
// every DefaultPresenceRefresh, so two heartbeats in a row may be lost
// before a live node's users look offline, and a dead node's users go
// offline at most TTL + the expiry tick (8.5 s) after its death, inside the
// contract's 10 s with room for the audience query and delivery.
const (
	DefaultPresenceBucket  = "chat_presence_v2"
	DefaultPresenceTTL     = 8 * time.Second
	DefaultPresenceRefresh = 2500 * time.Millisecond
	// DefaultPresenceAudience is the largest chat whose members hear of a
	// member's presence (docs/protocol.md).
	DefaultPresenceAudience = 256
	// DefaultPresenceLastSeenEntries is how many users' last_seen a node
	// keeps in memory; older ones are read from PostgreSQL. It is far
	// above presenceQueue, so a transition is handed to be recorded long
	// before its user is let go of here.
	DefaultPresenceLastSeenEntries = 10000
)

// presenceQueue bounds the transitions waiting for their audience lookup;
// beyond it a transition's frames are dropped (best effort), counted in the log.
const presenceQueue = 1024

// PresenceConfig configures Presence. Zero values take the defaults.
type PresenceConfig struct {
	// JS is the node's JetStream. Required.
	JS jetstream.JetStream
	// NodeID names this node's heartbeat (key "n.<node>") and entries
	// (key "u.<user>.<node>"). Required.
	NodeID string
	// Contacts returns who hears of user's presence: the users sharing a
	// chat of at most maxMembers members with user. Required.
	Contacts func(ctx context.Context, user string, maxMembers int) ([]string, error)
	// ContactsAmong returns those of among who share a chat of at most
	// maxMembers members with user: whose presence Lookup shows user. Nil
	// means Contacts(user) filtered to among.
	ContactsAmong func(ctx context.Context, user string, among []string, maxMembers int) ([]string, error)
	// Deliver hands a presence signal to this node's live connections; it
	// must not block. Required.
	Deliver func(chatd.Signal)
	// LastSeen keeps when users went offline beyond this node's memory:
	// every offline transition is recorded there, and Lookup asks it for
	// the users this node has not seen go offline (it started later, or the
	// whole cluster restarted). Nil: last_seen is only what this node saw.
	LastSeen LastSeenStore
	// LastSeenEntries bounds how many users' last_seen this node keeps in
	// memory, those it saw go offline most recently; Lookup reads the
	// others' from LastSeen. Zero means DefaultPresenceLastSeenEntries.
	LastSeenEntries int
	// Bucket is the KV bucket. Zero means DefaultPresenceBucket.
	Bucket string
	// Replicas of the bucket. Zero means 1.
	Replicas int
	// TTL is how long a heartbeat lives unrefreshed, Refresh how often this
	// node writes its own; zero means DefaultPresenceTTL and
	// DefaultPresenceRefresh.
	TTL     time.Duration
	Refresh time.Duration
	// Audience is the largest chat whose members hear of presence. Zero
	// means DefaultPresenceAudience.
	Audience int
	// Logger; nil means slog.Default(). Now; nil means time.Now.
	Logger *slog.Logger
	Now    func() time.Time
	// Registerer receives the presence metrics; nil registers nowhere.
	Registerer prometheus.Registerer
}

// LastSeenStore persists each user's last_seen. *store.Store implements it.
type LastSeenStore interface {
	// RecordLastSeen stores at unless a later time is stored already.
	RecordLastSeen(ctx context.Context, user string, at time.Time) error
	// LastSeen returns the stored time of each user that has one.
	LastSeen(ctx context.Context, users []string) (map[string]time.Time, error)
}

// Presence keeps the cluster's presence in a JetStream KV bucket: one
// heartbeat per node, rewritten every Refresh and naming the node's run
// (its incarnation), and one entry per user and node holding a session of
// theirs, written when the user's first session there starts and deleted
// when the last ends. Every node watches the bucket, derives each user's
// transitions (presenceTable) and tells its own connections of the users
// who hear of them; so a transition has no owner node, and a dead node's
// users go offline when its heartbeat lapses, although it can say nothing.
//
// The heartbeat is per node, not per user, because refreshing every user's
// entry cost a JetStream write per online user every Refresh on the
// writing node and a watch update on every node, which with many users
// online cost an idle node a large share of its CPU (docs/benchmarks-log.md,
// "Presence beats per node, not per user (2026-12-02,
// evening)").
// Connected, Disconnected and Lookup are safe for concurrent use and do not
// block; Run does the I/O.
type Presence struct {
	cfg     PresenceConfig
	inc     string              // this run's incarnation, in its heartbeat and entries
	pub     jetstream.JetStream // the pipelined writes' asynchronous publisher
	log     *slog.Logger
	sampled *logsample.Sampler
	wake    chan struct{} // 1-buffered: local sessions changed
	changes chan presenceChange
	metrics *presenceMetrics

	mu      sync.Mutex
	local   map[string]bool     // users with a session on this node
	pending map[string]struct{} // users whose entry must be put or deleted
	// retryAt, when set, is when pending's failed writes are tried again:
	// the watch may outlive a failed write (a bucket leader election, a
	// timeout), and nothing else rewrites an entry while its session lasts.
	retryAt time.Time
	table   *presenceTable
}

// NewPresence returns a Presence; call Run.
func NewPresence(cfg PresenceConfig) (*Presence, error) {
	switch {
	case cfg.JS == nil || cfg.NodeID == "" || cfg.Contacts == nil || cfg.Deliver == nil:
		return nil, errors.New("signal: PresenceConfig needs JS, NodeID, Contacts and Deliver")
	case strings.ContainsAny(cfg.NodeID, ".*> "):
		return nil, fmt.Errorf("signal: node id %q cannot be part of a KV key", cfg.NodeID)
	}
	if cfg.Bucket == "" {
		cfg.Bucket = DefaultPresenceBucket
	}
	if cfg.Replicas <= 0 {
		cfg.Replicas = 1
	}
	if cfg.TTL <= 0 {
		cfg.TTL = DefaultPresenceTTL
	}
	if cfg.Refresh <= 0 {
		cfg.Refresh = DefaultPresenceRefresh
	}
	if cfg.Audience <= 0 {
		cfg.Audience = DefaultPresenceAudience
	}
	if cfg.LastSeenEntries <= 0 {
		cfg.LastSeenEntries = DefaultPresenceLastSeenEntries
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	// Its own context, as the relay's: async acks time out after
	// presenceOpTimeout, and the pending cap is one refresh window.
	pub, err := jetstream.New(cfg.JS.Conn(),
		jetstream.WithPublishAsyncTimeout(presenceOpTimeout),
		jetstream.WithPublishAsyncMaxPending(refreshWindow))
	if err != nil {
		return nil, fmt.Errorf("signal: presence publisher: %w", err)
	}
	log := cfg.Logger.With("component", "presence")
	return &Presence{
		cfg: cfg, inc: ulid.Make().String(), pub: pub, log: log, sampled: logsample.New(log, logsample.Config{}),
		wake: make(chan struct{}, 1), changes: make(chan presenceChange, presenceQueue),
		local: make(map[string]bool), pending: make(map[string]struct{}),
		table: newPresenceTable(cfg.TTL, cfg.NodeID, cfg.LastSeenEntries), metrics: newPresenceMetrics(cfg.Registerer),
	}, nil
}

// NodeAlive reports whether node's heartbeat is live as this node sees the
// bucket, and whether that view is current (see presenceTable.alive): a
// node whose heartbeat lapsed in a current view is taken for dead by the
// whole cluster's presence, its users offline. Safe for concurrent use.
func (p *Presence) NodeAlive(node string) (alive, current bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.table.alive(node, p.cfg.Now())
}

// NodeLapsed reports when node was last heard, if this node saw its
// heartbeat lapse (not leave in order) within the last hour and it has not
// beaten since: evidence that node runs this presence and died, for a node
// that starts leading and never saw it alive in its own listings (the
// fence in pkg/push). Safe for concurrent use.
func (p *Presence) NodeLapsed(node string) (since time.Time, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.table.lapsedSince(node)
}

// Connected records that user's first session on this node started.
func (p *Presence) Connected(user string) { p.setLocal(user, true) }

// Disconnected records that user's last session on this node ended.
func (p *Presence) Disconnected(user string) { p.setLocal(user, false) }

func (p *Presence) setLocal(user string, on bool) {
	p.mu.Lock()
	if on {
		p.local[user] = true
	} else {
		delete(p.local, user)
	}
	p.pending[user] = struct{}{}
	p.mu.Unlock()
	p.signalWake()
}

// signalWake tells the watch loop that pending entries await their write.
func (p *Presence) signalWake() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// Lookup returns what viewer may know of each user's presence, in order.
// viewer sees the users who share a chat with them, of at most Audience
// members, as live presence tells them (and themselves): online from this
// node's view of the bucket, and for an offline user the last_seen this
// node saw, else the stored one (one query for all such users). Anyone
// else looks like a user never seen: offline, no last_seen; so presence
// cannot be polled for arbitrary user ids.
func (p *Presence) Lookup(ctx context.Context, viewer string, users []string) ([]chatd.Presence, error) {
	visible, err := p.visible(ctx, viewer, users)
	if err != nil {
		return nil, fmt.Errorf("presence: %w", err)
	}
	out := make([]chatd.Presence, len(users))
	var unknown []string
	p.mu.Lock()
	for i, u := range users {
		if !visible[u] {
			continue
		}
		out[i] = p.table.lookup(u)
		if !out[i].Online && out[i].LastSeen.IsZero() {
			unknown = append(unknown, u)
		}
	}
	p.mu.Unlock()
	if len(unknown) == 0 || p.cfg.LastSeen == nil {
		return out, nil
	}
	stored, err := p.cfg.LastSeen.LastSeen(ctx, unknown)
	if err != nil {
		return nil, fmt.Errorf("presence: %w", err)
	}
	for i, u := range users {
		if at, ok := stored[u]; ok && visible[u] && !out[i].Online && out[i].LastSeen.IsZero() {
			out[i].LastSeen = at
		}
	}
	return out, nil
}

// visible returns which of users viewer may see: viewer and viewer's
// contacts among them.
func (p *Presence) visible(ctx context.Context, viewer string, users []string) (map[string]bool, error) {
	others := make([]string, 0, len(users))
	for _, u := range users {
		if u != viewer {
			others = append(others, u)
		}
	}
	out := map[string]bool{viewer: true}
	if len(others) == 0 {
		return out, nil
	}
	var contacts []string
	var err error
	if p.cfg.ContactsAmong != nil {
		contacts, err = p.cfg.ContactsAmong(ctx, viewer, others, p.cfg.Audience)
	} else {
		contacts, err = p.cfg.Contacts(ctx, viewer, p.cfg.Audience)
	}
	if err != nil {
		return nil, err
	}
	asked := make(map[string]bool, len(others))
	for _, u := range others {
		asked[u] = true
	}
	for _, c := range contacts {
		if asked[c] {
			out[c] = true
		}
	}
	return out, nil
}

// The bucket's keys: "n.<node>" is a node's heartbeat, "u.<user>.<node>"
// a user's entry of a node (user and node ids hold no dots).
const (
	beatKeyPrefix  = "n."
	entryKeyPrefix = "u."
)

func (p *Presence) key(user string) string { return entryKeyPrefix + user + "." + p.cfg.NodeID }

func (p *Presence) beatKey() string { return beatKeyPrefix + p.cfg.NodeID }

// parseKey splits a bucket key into its node and, for a user's entry, its
// user; ok is false for a key of neither shape.
func parseKey(key string) (user, node string, beat, ok bool) {
	if rest, found := strings.CutPrefix(key, beatKeyPrefix); found {
		return "", rest, true, rest != "" && !strings.Contains(rest, ".")
	}
	rest, found := strings.CutPrefix(key, entryKeyPrefix)
	if !found {
		return "", "", false, false
	}
	user, node, found = strings.Cut(rest, ".")
	return user, node, false, found && user != "" && node != "" && !strings.Contains(node, ".")
}
