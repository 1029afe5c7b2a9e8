package stream

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/chatd/chatd/pkg/codec"
	"github.com/chatd/chatd/pkg/store"
	"github.com/nats-io/nats.go/jetstream"
)

// HighWater reads every message the stream holds and returns the highest
// seq per chat and the highest outbox id of their envelopes: after a
// PostgreSQL failover, what the new primary must not hand out again
// (store.HighWater). It covers what a node has not taken from its
// consumer yet (another node's commits); what reclaim already purged is
// not here, which is why nodes also keep their own marks. The stream is
// near empty while consumers keep up; ctx bounds a long read.
func HighWater(ctx context.Context, js jetstream.JetStream, name string) (store.HighWater, error) {
	hw := store.HighWater{Seqs: map[string]int64{}}
	s, err := js.Stream(ctx, name)
	if err != nil {
		return hw, fmt.Errorf("high water: stream %s: %w", name, err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		return hw, fmt.Errorf("high water: stream info: %w", err)
	}
	last := info.State.LastSeq
	if info.State.Msgs == 0 {
		return hw, nil
	}
	// An ordered consumer is ephemeral and not one of the nodes' push-*
	// consumers, so it never holds reclaim's floor. It is deleted once read:
	// while it exists a settling node takes it for a reader of the stream
	// and publishes every message (push's alone check), for the server's
	// default of five idle minutes; orderedIdle bounds that when the delete
	// does not happen (the process died mid-read).
	c, err := s.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{InactiveThreshold: orderedIdle})
	if err != nil {
		return hw, fmt.Errorf("high water: consumer: %w", err)
	}
	// Each fetch makes a new server consumer and deletes the one before in
	// the background: every one is deleted here, so none outlives the read.
	var made []string
	defer func() { deleteOrdered(s, made) }()
	for {
		batch, err := c.FetchNoWait(256)
		if info := c.CachedInfo(); info != nil && !slices.Contains(made, info.Name) {
			made = append(made, info.Name)
		}
		if err != nil {
			return hw, fmt.Errorf("high water: fetch: %w", err)
		}
		n, done := 0, false
		// Drained to the end even when done: the fetch's goroutine exits
		// only once its channel is read out.
		for msg := range batch.Messages() {
			n++
			meta, err := msg.Metadata()
			if err != nil {
				continue
			}
			if env, err := codec.DecodeEnvelope(msg.Data()); err == nil {
				hw.Seqs[env.Message.Chat] = max(hw.Seqs[env.Message.Chat], env.Message.Seq)
				hw.OutboxID = max(hw.OutboxID, env.OutboxID)
			}
			done = done || meta.Sequence.Stream >= last
		}
		if done {
			return hw, nil
		}
		if err := batch.Error(); err != nil && !errors.Is(err, jetstream.ErrNoMessages) {
			return hw, fmt.Errorf("high water: fetch: %w", err)
		}
		if n == 0 || ctx.Err() != nil {
			// Purged or expired under us: what is left was read.
			return hw, ctx.Err()
		}
	}
}

// orderedIdle is how long the server keeps HighWater's consumer once
// nothing reads it.
const orderedIdle = 5 * time.Second

// deleteOrdered deletes the server consumers HighWater's ordered consumer made.
// It has a context of its own: HighWater's may have ended.
func deleteOrdered(s jetstream.Stream, names []string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, name := range names {
		_ = s.DeleteConsumer(ctx, name) // gone already, or orderedIdle removes it
	}
}
