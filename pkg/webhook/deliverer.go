package webhook

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"github.com/chatd/chatd"
)

// Deliverer runs every configured endpoint. It is safe for concurrent use.
type Deliverer struct {
	cfg     Config
	log     *slog.Logger
	metrics *metrics
	hooks   map[string]*hook // by consumer name; fixed after New
}

// New checks cfg and returns a Deliverer; call Run.
func New(cfg Config) (*Deliverer, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	d := &Deliverer{cfg: cfg, log: cfg.Logger.With("component", "webhook"), metrics: newMetrics(cfg.Registerer),
		hooks: map[string]*hook{}}
	for _, e := range cfg.Endpoints {
		if e.wantsEvents() {
			h := newHook(d, e, eventSource(cfg.Stream))
			d.hooks[h.name] = h
		}
		if cfg.takesNotify(&e) {
			h := newHook(d, e, notifySource(cfg.NotifyStream))
			d.hooks[h.name] = h
		}
		if cfg.takesChanges(&e) {
			h := newHook(d, e, changeSource(cfg.ChangesStream))
			d.hooks[h.name] = h
		}
	}
	return d, nil
}

// Run delivers to every endpoint while this node holds its election, and
// stands by for the others, until ctx ends. It returns after every
// goroutine it started has stopped; the events it held unacked are given
// back to the stream (nak) for the next deliverer.
func (d *Deliverer) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	for _, h := range d.hooks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h.run(ctx)
		}()
	}
	wg.Wait()
	return nil
}

// Failed lists the events set aside after their attempts, oldest first,
// those with an id above after, at most limit; only endpoint's (a consumer
// name) unless it is empty.
func (d *Deliverer) Failed(ctx context.Context, endpoint string, after int64, limit int) ([]chatd.WebhookFailure, error) {
	return d.cfg.Store.Failures(ctx, endpoint, after, limit)
}

// ErrUnknownEndpoint: a dead letter of an endpoint no longer configured
// (it wraps chatd.ErrConflict).
var ErrUnknownEndpoint = fmt.Errorf("webhook endpoint not configured: %w", chatd.ErrConflict)

// ErrReplayFailed: the endpoint did not accept the replayed event; it stays
// set aside (it wraps chatd.ErrUnavailable).
var ErrReplayFailed = fmt.Errorf("webhook replay failed: %w", chatd.ErrUnavailable)

// Replay posts a set-aside event once more to its endpoint, with its
// original body and webhook-id and a fresh timestamp and signature, and
// removes it from the dead letters when the endpoint answers 2xx. It
// returns chatd.ErrNotFound for an unknown id, ErrUnknownEndpoint when its
// endpoint is no longer configured, and ErrReplayFailed when the endpoint
// refused it. A replay comes after later events of its chat: receivers
// order by data.seq if they must.
func (d *Deliverer) Replay(ctx context.Context, id int64) error {
	f, err := d.cfg.Store.Failure(ctx, id)
	if err != nil {
		return err
	}
	h, ok := d.hooks[f.Endpoint]
	if !ok {
		return fmt.Errorf("dead letter %d is for %s (%s), which is no longer configured: %w", id, f.Endpoint, redact(f.URL), ErrUnknownEndpoint)
	}
	c := newClient(ctx, &d.cfg, h.ep.URL, 1)
	defer c.close()
	if res := h.post(c, f.WebhookID, f.Body); res.err != nil {
		return fmt.Errorf("replay %d to %s: %v: %w", id, f.Endpoint, res.err, ErrReplayFailed)
	}
	h.m.delivered.Inc()
	return d.cfg.Store.DeleteFailure(ctx, id)
}
