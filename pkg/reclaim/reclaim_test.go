package reclaim_test

import (
	"context"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chatd/chatd/internal/testlog"
	"github.com/chatd/chatd/internal/testnats"
	"github.com/chatd/chatd/pkg/reclaim"
	"github.com/chatd/chatd/pkg/stream"
	"github.com/nats-io/nats.go/jetstream"
)

type pins []uint64

func (p pins) PinSeqs() []uint64 { return p }

func mustStream(t *testing.T) (jetstream.JetStream, jetstream.Stream) {
	t.Helper()
	js := testnats.JetStream(t)
	s, err := stream.Ensure(context.Background(), js, stream.Config{})
	if err != nil {
		t.Fatal(err)
	}
	return js, s
}

func publish(t *testing.T, js jetstream.JetStream, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		if _, err := js.Publish(context.Background(), stream.SubjectPrefix+"c", []byte("{}")); err != nil {
			t.Fatal(err)
		}
	}
}

// With no consumer and no pin the stream is purged to empty; a pin keeps
// everything from its sequence on; Collect never purges with 0 or 1.
func TestCollectPurgesBelowPinOnly(t *testing.T) {
	js, s := mustStream(t)
	publish(t, js, 10)
	r, err := reclaim.New(reclaim.Config{Stream: s, Pins: pins{4}, Interval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	snap, err := r.Collect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if snap.Floor != 4 || snap.First != 4 {
		t.Fatalf("with a pin at 4: floor %d first %d, want 4 and 4", snap.Floor, snap.First)
	}
	info, _ := s.Info(context.Background())
	if info.State.Msgs != 7 || info.State.FirstSeq != 4 {
		t.Fatalf("stream after purge: %d msgs from %d, want 7 from 4", info.State.Msgs, info.State.FirstSeq)
	}
	r2, _ := reclaim.New(reclaim.Config{Stream: s, Interval: time.Hour})
	if _, err := r2.Collect(context.Background()); err != nil {
		t.Fatal(err)
	}
	info, _ = s.Info(context.Background())
	if info.State.Msgs != 0 || info.State.LastSeq != 10 {
		t.Fatalf("unpinned stream after purge: %d msgs, last %d; want 0 and the sequence kept at 10", info.State.Msgs, info.State.LastSeq)
	}
}

// Sequences going backwards (the stream was recreated or lost its tail)
// trigger OnReset, and that pass purges nothing.
func TestCollectDetectsStreamReset(t *testing.T) {
	js, s := mustStream(t)
	publish(t, js, 5)
	var resets atomic.Int32
	r, err := reclaim.New(reclaim.Config{Stream: s, Pins: pins{1}, Interval: time.Hour, OnReset: func() { resets.Add(1) }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Collect(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := js.DeleteStream(context.Background(), stream.DefaultName); err != nil {
		t.Fatal(err)
	}
	testnats.Recreate(t, func() error {
		_, err := stream.Ensure(context.Background(), js, stream.Config{})
		return err
	})
	publish(t, js, 2)
	if _, err := r.Collect(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := resets.Load(); got != 1 {
		t.Fatalf("resets: got %d, want 1", got)
	}
}

// A failed pass is logged as what it is and what it leaves, not as a bare
// "reclaim".
func TestRunSaysWhatAFailedPassMeans(t *testing.T) {
	js, s := mustStream(t)
	var logs testlog.Buffer
	r, err := reclaim.New(reclaim.Config{Stream: s, Interval: 10 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if err := js.DeleteStream(context.Background(), s.CachedInfo().Config.Name); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(logs.String(), "level=WARN") && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	got := logs.String()
	if !strings.Contains(got, "keeps its messages until a pass succeeds") || !strings.Contains(got, "next_pass_in=10ms") {
		t.Errorf("a pass on a deleted stream logged:\n%s\nwant what the failure leaves and when the next pass runs", got)
	}
}
