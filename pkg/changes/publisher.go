// Package changes moves the chat changes PostgreSQL records (member
// changes and read positions, store.Config.RecordMembers and RecordReads)
// into a stream of their own, which each webhook endpoint that takes them
// consumes like the delivery stream, with the same retries and dead
// letters. One node at a time publishes (a PostgreSQL advisory lock elects
// it); a change leaves PostgreSQL only once the stream has it, so nothing is
// lost when the publisher or NATS stops, and a change published twice is
// dropped by the stream's deduplication.
package changes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/internal/elect"
	"github.com/chatd/chatd/internal/logsample"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
)

// LockName is the publisher's election lock.
const LockName = "chat-changes"

// MaxAge is how long the changes stream keeps a change, as the delivery
// stream's default: an endpoint down longer misses changes, which the REST
// API still answers. Changes recorded longer ago and never published are
// pruned from PostgreSQL too (store.PruneChanges).
const MaxAge = 24 * time.Hour

// batch bounds the changes one round reads and publishes.
const batch = 512

// ackWait bounds the wait for a wave's acks: an ack lost with a server that
// went down never comes, and the changes it stood for are published again.
const ackWait = 10 * time.Second

// Lock is a held election of the node that publishes.
type Lock = elect.Lock

// Store is what the publisher needs of PostgreSQL.
type Store interface {
	TryLock(ctx context.Context, name string) (Lock, bool, error)
	// ReadChanges returns the oldest recorded changes, at most limit, in
	// id order.
	ReadChanges(ctx context.Context, limit int) ([]chatd.ChatChange, error)
	// DeleteChanges removes published changes.
	DeleteChanges(ctx context.Context, ids []int64) error
}

// Config configures a Publisher. Zero values take the defaults.
type Config struct {
	// JS is the JetStream context. Stream is the changes stream's name and
	// SubjectPrefix its subjects' start (a change of chat C goes to
	// SubjectPrefix+C); Replicas its replica count (zero: 1). Required, but
	// for Replicas.
	JS            jetstream.JetStream
	Stream        string
	SubjectPrefix string
	Replicas      int
	Store         Store
	// Poll is how often the publisher looks for changes while there are
	// none. Zero means 100 ms.
	Poll time.Duration
	// Standby is how often a node that does not publish tries to take
	// over. Zero means 2 s.
	Standby    time.Duration
	Logger     *slog.Logger
	Registerer prometheus.Registerer
}

// Publisher publishes the recorded changes. Run it on every node: one at a
// time publishes, the others stand by.
type Publisher struct {
	cfg     Config
	log     *slog.Logger
	sampled *logsample.Sampler
	count   prometheus.Counter // published
	lead    prometheus.Gauge   // 1 while leading
}

// New checks cfg and returns a Publisher; call EnsureStream, then Run.
func New(cfg Config) (*Publisher, error) {
	if cfg.JS == nil || cfg.Stream == "" || cfg.SubjectPrefix == "" || cfg.Store == nil {
		return nil, errors.New("changes: Config.JS, Stream, SubjectPrefix and Store are required")
	}
	if cfg.Poll <= 0 {
		cfg.Poll = 100 * time.Millisecond
	}
	if cfg.Standby <= 0 {
		cfg.Standby = 2 * time.Second
	}
	cfg.Replicas = max(cfg.Replicas, 1)
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	log := cfg.Logger.With("component", "changes")
	p := &Publisher{cfg: cfg, log: log, sampled: logsample.New(log, logsample.Config{}),
		count: prometheus.NewCounter(prometheus.CounterOpts{Name: "chatd_changes_published_total",
			Help: "Chat changes (members, read positions) published to the changes stream for the webhooks."}),
		lead: prometheus.NewGauge(prometheus.GaugeOpts{Name: "chatd_changes_leading",
			Help: "1 while this node is the one that publishes chat changes."}),
	}
	if cfg.Registerer != nil {
		cfg.Registerer.MustRegister(p.count, p.lead)
	}
	return p, nil
}

// EnsureStream creates or updates the changes stream. The node calls it
// before the webhooks start, which consume it.
func (p *Publisher) EnsureStream(ctx context.Context) error {
	_, err := p.cfg.JS.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name:        p.cfg.Stream,
		Description: "chatd member changes and read positions, for the webhooks",
		Subjects:    []string{p.cfg.SubjectPrefix + ">"},
		Storage:     jetstream.FileStorage,
		Replicas:    p.cfg.Replicas,
		MaxAge:      MaxAge,
		// A publisher that stops between publishing and deleting leaves
		// the next one to publish again: the key drops the copy.
		Duplicates: 5 * time.Minute,
	})
	if err != nil {
		return fmt.Errorf("changes stream %s: %w", p.cfg.Stream, err)
	}
	return nil
}

// Run publishes while this node holds the election, until ctx ends.
func (p *Publisher) Run(ctx context.Context) error {
	defer p.sampled.Flush()
	elect.Run(ctx, elect.Config{
		What: "chat changes publisher", Name: LockName, TryLock: p.cfg.Store.TryLock, Standby: p.cfg.Standby,
		Lead: p.publish,
		Leading: func(on bool) {
			if on {
				p.lead.Set(1)
			} else {
				p.lead.Set(0)
			}
		},
		Log: p.log, Warn: p.sampled.Warn,
	})
	return nil
}

// publish moves changes into the stream until ctx ends or a round fails.
func (p *Publisher) publish(ctx context.Context) error {
	for {
		cs, err := p.cfg.Store.ReadChanges(ctx, batch)
		if err != nil {
			return err
		}
		if len(cs) == 0 {
			if !elect.Sleep(ctx, p.cfg.Poll) {
				return nil
			}
			continue
		}
		if err := p.round(ctx, cs); err != nil {
			return err
		}
	}
}

// round publishes cs and deletes what the stream took. It publishes in
// waves: the first change of every chat, then the second, and so on, each
// wave's acks awaited before the next, so a chat's change whose publish
// failed is never overtaken by the chat's next one; such a chat sits out the
// round's later waves.
func (p *Publisher) round(ctx context.Context, cs []chatd.ChatChange) error {
	waves := map[string][]int{} // chat → indexes into cs, in id order
	var chats []string
	for i := range cs {
		c := cs[i].Chat
		if _, ok := waves[c]; !ok {
			chats = append(chats, c)
		}
		waves[c] = append(waves[c], i)
	}
	var done []int64
	var firstErr error
	for w := 0; len(chats) > 0; w++ {
		futures := make([]jetstream.PubAckFuture, len(chats))
		for i, chat := range chats {
			f, err := p.send(&cs[waves[chat][w]])
			if err != nil {
				firstErr = firstOf(firstErr, err)
				continue
			}
			futures[i] = f
		}
		var next []string
		wctx, cancel := context.WithTimeout(ctx, ackWait)
		for i, chat := range chats {
			if futures[i] == nil {
				continue
			}
			select {
			case <-futures[i].Ok():
				done = append(done, cs[waves[chat][w]].ID)
				if w+1 < len(waves[chat]) {
					next = append(next, chat)
				}
			case err := <-futures[i].Err():
				firstErr = firstOf(firstErr, err)
			case <-wctx.Done():
				firstErr = firstOf(firstErr, fmt.Errorf("no ack from the changes stream: %w", wctx.Err()))
			}
		}
		cancel()
		chats = next
	}
	if len(done) > 0 {
		if err := p.cfg.Store.DeleteChanges(ctx, done); err != nil {
			return err
		}
		p.count.Add(float64(len(done)))
	}
	return firstErr
}

func (p *Publisher) send(c *chatd.ChatChange) (jetstream.PubAckFuture, error) {
	data, err := json.Marshal(c)
	if err != nil {
		return nil, err
	}
	msg := &nats.Msg{Subject: p.cfg.SubjectPrefix + c.Chat, Data: data, Header: nats.Header{}}
	msg.Header.Set(jetstream.MsgIDHeader, c.Key())
	return p.cfg.JS.PublishMsgAsync(msg)
}

func firstOf(first, err error) error {
	if first != nil {
		return first
	}
	return err
}
