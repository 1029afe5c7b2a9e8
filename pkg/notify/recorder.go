package notify

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/chatd/chatd/internal/logsample"
)

// Recorder gathers how far this node's sessions acked each chat and writes
// it to PostgreSQL every FlushEvery, one row per member and chat however
// many messages were acked meanwhile. It is safe for concurrent use.
type Recorder struct {
	cfg     *Config
	sampled *logsample.Sampler
	m       *metrics

	mu      sync.Mutex
	pending map[key]int64
}

func newRecorder(cfg *Config, log *slog.Logger, m *metrics) *Recorder {
	return &Recorder{cfg: cfg, sampled: logsample.New(log, logsample.Config{}), m: m, pending: map[key]int64{}}
}

// Acked records that a session of user acked chat's message seq. It is
// quick: push calls it for every ack.
func (r *Recorder) Acked(user, chat string, seq int64) {
	k := key{user, chat}
	r.mu.Lock()
	if seq > r.pending[k] {
		r.pending[k] = seq
	}
	r.mu.Unlock()
}

// Run writes what was recorded every FlushEvery until ctx ends, and once
// more then.
func (r *Recorder) Run(ctx context.Context) error {
	defer r.sampled.Flush()
	t := time.NewTicker(r.cfg.FlushEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			stop, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
			r.flush(stop)
			cancel()
			return nil
		case <-t.C:
			r.flush(ctx)
		}
	}
}

// flush writes the recorded positions. What a failed write held is merged
// back (positions only move forward), so the map stays one entry per
// member and chat while PostgreSQL is away.
func (r *Recorder) flush(ctx context.Context) {
	r.mu.Lock()
	batch := r.pending
	if len(batch) == 0 {
		r.mu.Unlock()
		return
	}
	r.pending = make(map[key]int64, len(batch))
	r.mu.Unlock()
	users, chats, seqs := make([]string, 0, len(batch)), make([]string, 0, len(batch)), make([]int64, 0, len(batch))
	for k, seq := range batch {
		users, chats, seqs = append(users, k.user), append(chats, k.chat), append(seqs, seq)
	}
	if err := r.cfg.Store.RecordDelivered(ctx, users, chats, seqs); err != nil {
		r.sampled.Warn("record delivery positions; retrying (check PostgreSQL)", "rows", len(batch), "err", err)
		r.m.recordFailed.Inc()
		r.mu.Lock()
		for k, seq := range batch {
			if seq > r.pending[k] {
				r.pending[k] = seq
			}
		}
		r.mu.Unlock()
		return
	}
	r.m.recorded.Add(float64(len(batch)))
}
