package reclaim_test

import (
	"context"
	"testing"
	"time"

	"github.com/chatd/chatd/pkg/reclaim"
	"github.com/chatd/chatd/pkg/stream"
	"github.com/nats-io/nats.go/jetstream"
)

// A consumer someone made with the nats CLI to look at the stream (ack
// floor 0 for ever) must not hold the floor: only node consumers count.
func TestForeignConsumerDoesNotHoldFloor(t *testing.T) {
	js, s := mustStream(t)
	publish(t, js, 10)
	ctx := context.Background()
	node, err := s.CreateConsumer(ctx, jetstream.ConsumerConfig{Durable: "push-a", AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateConsumer(ctx, jetstream.ConsumerConfig{Durable: "debug", AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
		t.Fatal(err)
	}
	ackNext(t, node, 10)
	r, err := reclaim.New(reclaim.Config{Stream: s, ConsumerPrefix: "push-", Interval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	snap, err := r.Collect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if snap.Floor != 11 {
		t.Fatalf("floor %d with node consumer push-a done to 10 and a foreign consumer at 0, want 11 (consumers %+v)", snap.Floor, snap.Consumers)
	}
	if len(snap.Consumers) != 1 || snap.Consumers[0].Name != "push-a" {
		t.Fatalf("counted consumers %+v, want only push-a", snap.Consumers)
	}
}

// A webhook endpoint's consumer holds the floor like a node's: nothing it
// has not acked is purged, however far the nodes got.
func TestWebhookConsumerHoldsFloor(t *testing.T) {
	js, s := mustStream(t)
	publish(t, js, 10)
	ctx := context.Background()
	node, err := s.CreateConsumer(ctx, jetstream.ConsumerConfig{Durable: "push-a", AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		t.Fatal(err)
	}
	hook, err := s.CreateConsumer(ctx, jetstream.ConsumerConfig{Durable: "hook-0123", AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		t.Fatal(err)
	}
	ackNext(t, node, 10)
	ackNext(t, hook, 4)
	r, err := reclaim.New(reclaim.Config{Stream: s, ConsumerPrefix: "push-", AlsoPrefixes: []string{"hook-"}, Interval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	snap, err := r.Collect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if snap.Floor != 5 || snap.First != 5 {
		t.Fatalf("floor %d (first %d) with push-a done to 10 and hook-0123 to 4, want 5 (consumers %+v)", snap.Floor, snap.First, snap.Consumers)
	}
}

// A consumer that filters out part of the stream (a node's live delivery
// skips the messages every recipient took live, published apart) holds
// the floor only at what it still needs: once it has acked everything in
// its filter, the messages after it, all outside the filter, do not keep
// the stream from being purged. JetStream leaves such a consumer's ack
// floor at the last message it took. A consumer with a message still
// pending keeps holding it.
func TestFilteredConsumerHoldsOnlyWhatItNeeds(t *testing.T) {
	js, s := mustStream(t)
	ctx := context.Background()
	node, err := s.CreateConsumer(ctx, jetstream.ConsumerConfig{Durable: "push-a", AckPolicy: jetstream.AckExplicitPolicy,
		FilterSubject: stream.SubjectPrefix + "*"})
	if err != nil {
		t.Fatal(err)
	}
	publish(t, js, 5)
	for range 5 {
		if _, err := js.Publish(ctx, stream.SubjectPrefix+"taken.c", []byte("{}")); err != nil {
			t.Fatal(err)
		}
	}
	ackNext(t, node, 5)
	r, err := reclaim.New(reclaim.Config{Stream: s, ConsumerPrefix: "push-", Interval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	snap, err := r.Inspect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if snap.Floor != 11 {
		t.Fatalf("floor %d with push-a done with the 5 messages of its filter and 5 outside it after them, want 11 (consumers %+v)", snap.Floor, snap.Consumers)
	}

	publish(t, js, 1) // seq 11, in its filter, not taken yet
	if snap, err = r.Inspect(ctx); err != nil || snap.Floor > 11 {
		t.Fatalf("with seq 11 pending for push-a: floor %d, %v; want 11 or lower", snap.Floor, err)
	}
}

// ackNext takes the next n messages of cons and acks each, as a node
// whose recipients all acked them would.
func ackNext(t *testing.T, cons jetstream.Consumer, n int) {
	t.Helper()
	batch, err := cons.Fetch(n, jetstream.FetchMaxWait(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	for m := range batch.Messages() {
		if err := m.DoubleAck(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
}
