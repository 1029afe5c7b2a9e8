package reclaim

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
)

// Pinner reports the pins (lowest un-acked stream sequence) of this node's
// connections. *push.Registry satisfies it; the wiring passes it in, so
// reclaim does not import push.
type Pinner interface {
	PinSeqs() []uint64
}

// DefaultInterval is Config.Interval's default, and the flag's (cmd/chatd).
const DefaultInterval = 5 * time.Second

// Config configures a Reclaimer. Zero values take the documented defaults.
type Config struct {
	// Stream is the delivery stream. Required.
	Stream jetstream.Stream
	// Pins reports this node's connection pins. Nil means none.
	Pins Pinner
	// ConsumerPrefix names the node consumers (push.ConsumerPrefix, passed
	// in by the wiring: reclaim does not import push). Only consumers whose
	// name starts with it hold the floor, so one made with the nats CLI for
	// debugging cannot pin the stream until MaxBytes stops the relay. A dead
	// node's consumer counts until JetStream deletes it after its inactive
	// threshold. Empty means every consumer on the stream counts.
	ConsumerPrefix string
	// AlsoPrefixes name more consumers that hold the floor: the webhook
	// endpoints' (webhook.ConsumerPrefix), so nothing an endpoint has not
	// acked is purged. Nil: none.
	AlsoPrefixes []string
	// Interval is the GC interval. Zero means DefaultInterval.
	Interval time.Duration
	// MinPurge is how many messages a purge must free to be worth a call;
	// a purge that empties the stream always runs. Zero means 1.
	MinPurge uint64
	// OnReset is called when the stream's sequences went backwards (the
	// stream was recreated or lost data): every pin refers to sequences that
	// no longer mean anything, so the pin holders must be rebuilt.
	OnReset func()
	Logger  *slog.Logger
	// Registerer receives the reclaim metrics; nil means none.
	Registerer prometheus.Registerer
}

// Snapshot is the state of the last floor computation.
type Snapshot struct {
	At        time.Time       `json:"at"`
	First     uint64          `json:"first_seq"`
	Last      uint64          `json:"last_seq"`
	Msgs      uint64          `json:"messages"`
	Floor     uint64          `json:"floor"`
	Consumers []ConsumerFloor `json:"consumers"`
	Purged    uint64          `json:"purged_total"`
}

// Reclaimer purges the delivery stream below the Tetris floor on a GC interval.
type Reclaimer struct {
	cfg     Config
	log     *slog.Logger
	metrics *metrics

	mu       sync.Mutex
	last     Snapshot // guarded by mu
	lastSeen uint64   // highest LastSeq seen; guarded by mu
}

// New returns a Reclaimer; call Run.
func New(cfg Config) (*Reclaimer, error) {
	if cfg.Stream == nil {
		return nil, errors.New("reclaim: Config.Stream is required")
	}
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.MinPurge == 0 {
		cfg.MinPurge = 1
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	m := newMetrics(cfg.Registerer)
	return &Reclaimer{cfg: cfg, log: cfg.Logger.With("component", "reclaim"), metrics: m}, nil
}

// Run computes the floor and purges on every interval until ctx is done.
func (r *Reclaimer) Run(ctx context.Context) error {
	t := time.NewTicker(r.cfg.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			if _, err := r.Collect(ctx); err != nil && ctx.Err() == nil {
				r.log.Warn("cannot reclaim the delivery stream's space this pass; it keeps its messages until a pass succeeds (is NATS JetStream up?)", "err", err, "next_pass_in", r.cfg.Interval)
			}
		}
	}
}

// Last returns the most recent snapshot.
func (r *Reclaimer) Last() Snapshot {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last
}

// Inspect computes the floor without purging: the admin view.
func (r *Reclaimer) Inspect(ctx context.Context) (Snapshot, error) {
	snap, err := r.compute(ctx)
	if err != nil {
		return snap, err
	}
	r.mu.Lock()
	snap.Purged = r.last.Purged
	r.mu.Unlock()
	return snap, nil
}

// Collect runs one GC pass: read the stream and its consumers, compute the
// floor, purge below it when that frees at least MinPurge messages.
func (r *Reclaimer) Collect(ctx context.Context) (Snapshot, error) {
	snap, err := r.compute(ctx)
	if err != nil {
		return snap, err
	}
	if r.detectReset(snap.Last) {
		// The pins just read refer to the old sequences: purge next pass.
		return snap, nil
	}
	floor, first, last := snap.Floor, snap.First, snap.Last
	// Never purge with 0 or 1: a purge at sequence 0 empties the whole stream.
	if floor > 1 && floor > first && (floor-first >= r.cfg.MinPurge || floor == last+1) {
		if err := r.cfg.Stream.Purge(ctx, jetstream.WithPurgeSequence(floor)); err != nil {
			return snap, fmt.Errorf("purge below %d: %w", floor, err)
		}
		r.metrics.purged.Add(float64(floor - first))
		snap.Purged = floor - first
		snap.First = floor
	}
	r.mu.Lock()
	snap.Purged += r.last.Purged
	r.last = snap
	r.mu.Unlock()
	return snap, nil
}

// compute reads the stream, the pins and the consumers and derives the floor.
func (r *Reclaimer) compute(ctx context.Context) (Snapshot, error) {
	info, err := r.cfg.Stream.Info(ctx)
	if err != nil {
		return Snapshot{}, fmt.Errorf("stream info: %w", err)
	}
	first, last := info.State.FirstSeq, info.State.LastSeq
	// Pins are read before consumer floors: a message acked between the two
	// reads can only make the floor lower (safer), never higher.
	var pins []uint64
	if r.cfg.Pins != nil {
		pins = r.cfg.Pins.PinSeqs()
	}
	consumers, err := r.consumerFloors(ctx, last)
	if err != nil {
		return Snapshot{}, err
	}
	floor := Floor(first, last, consumers, pins)
	r.metrics.floor.Set(float64(floor))
	r.metrics.depth.Set(float64(info.State.Msgs))
	return Snapshot{At: time.Now(), First: first, Last: last, Msgs: info.State.Msgs, Floor: floor, Consumers: consumers}, nil
}

// detectReset notices a stream whose sequences went backwards: JetStream
// lost messages (lazy fsync after a power loss) or the stream was recreated.
func (r *Reclaimer) detectReset(last uint64) bool {
	r.mu.Lock()
	reset := last < r.lastSeen
	r.lastSeen = last
	r.mu.Unlock()
	if reset {
		r.metrics.resets.Inc()
		r.log.Warn("delivery stream sequences went backwards; rebuilding pins", "last_seq", last)
		if r.cfg.OnReset != nil {
			r.cfg.OnReset()
		}
	}
	return reset
}

// consumerFloors lists the floor-holding consumers' ack floors; last is
// the stream's last seq, read before the listing.
func (r *Reclaimer) consumerFloors(ctx context.Context, last uint64) ([]ConsumerFloor, error) {
	lister := r.cfg.Stream.ListConsumers(ctx)
	var floors []ConsumerFloor
	for ci := range lister.Info() {
		if !r.holdsFloor(ci.Name) {
			continue // not a node's nor an endpoint's: a debugging consumer must not hold the floor
		}
		floor := ci.AckFloor.Stream
		if ci.NumPending == 0 && ci.NumAckPending == 0 {
			// Caught up: it needs nothing the stream held when compute
			// read its last seq (before this listing). A filtered
			// consumer's own ack floor stays at the last message it took
			// while the messages after it are all outside its filter.
			floor = max(floor, last)
		}
		floors = append(floors, ConsumerFloor{Name: ci.Name, AckFloor: floor})
	}
	if err := lister.Err(); err != nil {
		return nil, fmt.Errorf("list consumers: %w", err)
	}
	return floors, nil
}

// holdsFloor reports whether the consumer named name counts toward the floor.
func (r *Reclaimer) holdsFloor(name string) bool {
	if strings.HasPrefix(name, r.cfg.ConsumerPrefix) {
		return true
	}
	for _, p := range r.cfg.AlsoPrefixes {
		if p != "" && strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}
