package stream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/pkg/store"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
)

// Outbox is the PostgreSQL side the relay drains. *store.Store implements it.
type Outbox interface {
	ReadOutbox(ctx context.Context, limit int) ([]store.OutboxEntry, error)
	DeleteOutbox(ctx context.Context, ids []int64) (int64, error)
	TryRelayLock(ctx context.Context) (*store.RelayLock, bool, error)
	ListenOutbox(ctx context.Context, wake func()) error
}

// RelayConfig configures a Relay. Zero values take the documented defaults.
type RelayConfig struct {
	// Outbox and JS are required.
	Outbox Outbox
	JS     jetstream.JetStream
	// Batch is how many outbox rows one round publishes. Zero means 256.
	Batch int
	// Poll is the fallback wake-up when no commit signal arrives. Zero means 1 s.
	Poll time.Duration
	// Standby is how often a relay without the lock tries to take it over.
	// Zero means 2 s.
	Standby time.Duration
	// PublishTimeout bounds waiting for one round's publish acks. Zero means 10 s.
	PublishTimeout time.Duration
	// Now is the clock for lag metrics. Nil means time.Now.
	Now        func() time.Time
	Logger     *slog.Logger
	Registerer prometheus.Registerer
}

func (c *RelayConfig) setDefaults() error {
	if c.Outbox == nil || c.JS == nil {
		return errors.New("stream: RelayConfig.Outbox and JS are required")
	}
	if c.Batch <= 0 {
		c.Batch = 256
	}
	if c.Poll <= 0 {
		c.Poll = time.Second
	}
	if c.Standby <= 0 {
		c.Standby = 2 * time.Second
	}
	if c.PublishTimeout <= 0 {
		c.PublishTimeout = 10 * time.Second
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
// others stand by and take over when the leader's session ends.
type Relay struct {
	cfg     RelayConfig
	log     *slog.Logger
	wake    chan struct{}
	metrics *relayMetrics
	active  atomic.Bool
}

// NewRelay returns a Relay; call Run.
func NewRelay(cfg RelayConfig) (*Relay, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	m := newRelayMetrics(cfg.Registerer)
	return &Relay{cfg: cfg, log: cfg.Logger.With("component", "relay"), wake: make(chan struct{}, 1), metrics: m}, nil
}

// Active reports whether this relay holds the relay lock right now.
func (r *Relay) Active() bool { return r.active.Load() }

// Wake tells the relay that rows were committed. It never blocks.
func (r *Relay) Wake() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// Run relays until ctx is done. It listens for commits of other nodes,
// contends for the relay lock, and while it holds it drains the outbox.
// It returns after its goroutines exit.
func (r *Relay) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := r.cfg.Outbox.ListenOutbox(ctx, r.Wake); err != nil && ctx.Err() == nil {
			r.log.Warn("listen for outbox commits stopped; relying on the poll", "err", err)
		}
	}()
	defer wg.Wait()
	for ctx.Err() == nil {
		lock, held, err := r.cfg.Outbox.TryRelayLock(ctx)
		if err != nil && ctx.Err() == nil {
			r.log.Warn("try relay lock", "err", err)
		}
		if !held {
			sleep(ctx, r.cfg.Standby)
			continue
		}
		r.log.Info("relay active on this node")
		r.metrics.leader.Set(1)
		r.active.Store(true)
		err = r.lead(ctx, lock)
		r.active.Store(false)
		r.metrics.leader.Set(0)
		lock.Release()
		if err != nil && ctx.Err() == nil {
			r.log.Warn("relay stepped down", "err", err)
			sleep(ctx, r.cfg.Poll)
		}
	}
	return nil
}

// lead drains the outbox while this node holds the relay lock.
func (r *Relay) lead(ctx context.Context, lock *store.RelayLock) error {
	backoff := 50 * time.Millisecond
	lastCheck := time.Now()
	for ctx.Err() == nil {
		if time.Since(lastCheck) > r.cfg.Standby {
			if err := lock.Check(ctx); err != nil {
				return fmt.Errorf("relay lock lost: %w", err)
			}
			lastCheck = time.Now()
		}
		n, err := r.round(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			// NATS or PostgreSQL is down: rows stay in the outbox and are
			// republished from the first unacknowledged one.
			r.metrics.errors.Inc()
			r.log.Warn("relay round failed; will retry", "err", err, "backoff", backoff)
			sleep(ctx, backoff)
			backoff = min(backoff*2, 5*time.Second)
		case n == r.cfg.Batch:
			backoff = 50 * time.Millisecond
		case err == nil:
			backoff = 50 * time.Millisecond
			r.idle(ctx)
		}
	}
	return nil
}

// idle waits for a commit signal or the fallback poll.
func (r *Relay) idle(ctx context.Context) {
	t := time.NewTimer(r.cfg.Poll)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-r.wake:
	case <-t.C:
	}
}

// round publishes the oldest outbox rows in order, waits for the stream's
// acks, and deletes the acknowledged prefix. It returns how many rows it read.
func (r *Relay) round(ctx context.Context) (int, error) {
	entries, err := r.cfg.Outbox.ReadOutbox(ctx, r.cfg.Batch)
	if err != nil || len(entries) == 0 {
		return 0, err
	}
	futures := make([]jetstream.PubAckFuture, 0, len(entries))
	var pubErr error
	for i := range entries {
		f, err := r.publish(&entries[i])
		if err != nil {
			pubErr = err
			break
		}
		futures = append(futures, f)
	}
	acked, waitErr := r.await(ctx, futures)
	if acked > 0 {
		ids := make([]int64, acked)
		now := r.cfg.Now()
		for i := range ids {
			ids[i] = entries[i].ID
			r.metrics.lag.Observe(now.Sub(entries[i].CreatedAt).Seconds())
		}
		if _, err := r.cfg.Outbox.DeleteOutbox(ctx, ids); err != nil {
			// Published but not deleted: the next round republishes them and
			// the stream's duplicate window drops the copies.
			return 0, fmt.Errorf("delete relayed rows: %w", err)
		}
		r.metrics.relayed.Add(float64(acked))
	}
	if pubErr != nil {
		return acked, fmt.Errorf("publish: %w", pubErr)
	}
	return len(entries), waitErr
}

func (r *Relay) publish(e *store.OutboxEntry) (jetstream.PubAckFuture, error) {
	data, err := json.Marshal(chatd.Envelope{OutboxID: e.ID, Message: e.Message, Device: e.Message.Device, Recipients: e.Recipients})
	if err != nil {
		return nil, fmt.Errorf("encode envelope %d: %w", e.ID, err)
	}
	msg := &nats.Msg{Subject: SubjectPrefix + e.Message.Chat, Data: data}
	// No client-side retries: a retry could land after later rows and
	// reorder the stream; the round republishes from the first failure.
	return r.cfg.JS.PublishMsgAsync(msg,
		jetstream.WithMsgID(strconv.FormatInt(e.ID, 10)),
		jetstream.WithRetryAttempts(0))
}

// await waits for the futures in order and returns the length of the
// acknowledged prefix: only rows below the first failure may be deleted.
func (r *Relay) await(ctx context.Context, futures []jetstream.PubAckFuture) (int, error) {
	timeout := time.NewTimer(r.cfg.PublishTimeout)
	defer timeout.Stop()
	for i, f := range futures {
		select {
		case <-f.Ok():
		case err := <-f.Err():
			return i, err
		case <-timeout.C:
			return i, errors.New("timed out waiting for publish acks")
		case <-ctx.Done():
			return i, ctx.Err()
		}
	}
	return len(futures), nil
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
