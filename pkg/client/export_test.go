package client

import (
	"context"
	"time"

	"github.com/chatd/chatd"
)

// Test hooks: the black-box tests drive the pure parts through these.

type Tracker struct{ t *tracker }

func NewTracker(maxHeld int) *Tracker { return &Tracker{newTracker(maxHeld)} }

func (t *Tracker) Track(chat string, after int64) bool { return t.t.track(chat, after) }

// Add returns the seqs made ready, in hand-out order, and whether m was a duplicate.
func (t *Tracker) Add(m chatd.Message) ([]int64, bool) {
	ready, dup := t.t.add(nil, m, ViaLive)
	return seqs(ready), dup
}

func (t *Tracker) SkipTo(chat string, seq int64) []int64 { return seqs(t.t.skipTo(chat, seq)) }
func (t *Tracker) Contiguous(chat string) (int64, bool)  { return t.t.contiguous(chat) }
func (t *Tracker) HasGap(chat string) bool               { return t.t.hasGap(chat) }
func (t *Tracker) Held() int                             { return t.t.heldCount() }

func seqs(es []entry) []int64 {
	out := make([]int64, 0, len(es))
	for _, e := range es {
		out = append(out, e.msg.Seq)
	}
	return out
}

func BackoffDelay(min, max time.Duration, n int) time.Duration {
	return backoff{min: min, max: max}.delay(n)
}

type Acker struct{ a *acker }

func NewAcker(delay time.Duration, maxIDs int, flush func([]string) error) *Acker {
	return &Acker{newAcker(delay, maxIDs, flush)}
}
func (a *Acker) Add(id string)                 { a.a.add(id) }
func (a *Acker) Run(ctx context.Context) error { return a.a.run(ctx) }
func (a *Acker) Drain() error                  { return a.a.drain() }

// AckDelay is the ack window the client resolved from its Config.
func (c *Client) AckDelay() time.Duration { return c.cfg.AckDelay }
