package client_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/chatd/chatd/pkg/client"
)

type flushLog struct {
	mu      sync.Mutex
	batches [][]string
	at      []time.Time
	got     chan struct{}
}

func (f *flushLog) flush(ids []string) error {
	f.mu.Lock()
	f.batches = append(f.batches, append([]string(nil), ids...))
	f.at = append(f.at, time.Now())
	f.mu.Unlock()
	f.got <- struct{}{}
	return nil
}

func mustRunAcker(t *testing.T, delay time.Duration, maxIDs int) (*client.Acker, *flushLog) {
	t.Helper()
	fl := &flushLog{got: make(chan struct{}, 100)}
	a := client.NewAcker(delay, maxIDs, fl.flush)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); a.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return a, fl
}

func waitFlush(t *testing.T, fl *flushLog) {
	t.Helper()
	select {
	case <-fl.got:
	case <-time.After(2 * time.Second):
		t.Fatal("no ack frame within 2s")
	}
}

func TestAckerBatchesWithinDelay(t *testing.T) {
	const delay = 50 * time.Millisecond
	a, fl := mustRunAcker(t, delay, 1000)
	start := time.Now()
	for i := range 100 {
		a.Add(fmt.Sprint("id", i))
	}
	waitFlush(t, fl)
	if el := time.Since(start); el < delay {
		t.Fatalf("flushed after %v, want the batch window of %v to pass first", el, delay)
	}
	select {
	case <-fl.got:
		t.Fatalf("got a second frame, want all 100 ids in one")
	case <-time.After(3 * delay):
	}
	fl.mu.Lock()
	if len(fl.batches) != 1 || len(fl.batches[0]) != 100 {
		t.Fatalf("got batches of %d frames, first %d ids; want 1 frame of 100", len(fl.batches), len(fl.batches[0]))
	}
	fl.mu.Unlock()

	// A later id starts a new batch.
	a.Add("late")
	waitFlush(t, fl)
	fl.mu.Lock()
	defer fl.mu.Unlock()
	if got := fl.batches[1]; len(got) != 1 || got[0] != "late" {
		t.Fatalf("second batch: got %v, want [late]", got)
	}
}

func TestAckerFullBatchFlushesEarly(t *testing.T) {
	a, fl := mustRunAcker(t, time.Hour, 10)
	for i := range 10 {
		a.Add(fmt.Sprint("id", i))
	}
	waitFlush(t, fl) // a full batch does not wait the hour
	fl.mu.Lock()
	defer fl.mu.Unlock()
	if len(fl.batches[0]) != 10 {
		t.Fatalf("got %d ids, want 10", len(fl.batches[0]))
	}
}

func TestAckerDrainSplitsFrames(t *testing.T) {
	fl := &flushLog{got: make(chan struct{}, 100)}
	a := client.NewAcker(time.Hour, 10, fl.flush)
	for i := range 25 {
		a.Add(fmt.Sprint("x", i))
	}
	if err := a.Drain(); err != nil {
		t.Fatalf("drain: %v", err)
	}
	var sizes []int
	for _, b := range fl.batches {
		sizes = append(sizes, len(b))
	}
	if fmt.Sprint(sizes) != "[10 10 5]" {
		t.Fatalf("got frames of %v ids, want [10 10 5]", sizes)
	}
}

// A flush that fails on the timer (the connection is gone) ends run with
// its error, so the session ends instead of collecting ids nobody sends.
func TestAckerTimedFlushFailureEndsRun(t *testing.T) {
	broken := errors.New("write: broken pipe")
	a := client.NewAcker(time.Millisecond, 1000, func([]string) error { return broken })
	done := make(chan error, 1)
	go func() { done <- a.Run(context.Background()) }()
	a.Add("id1")
	select {
	case err := <-done:
		if !errors.Is(err, broken) {
			t.Fatalf("run: got %v, want %v", err, broken)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("run did not end within 2s of a failed flush")
	}
}

// A negative AckDelay is kept (not turned into the 50 ms default): the
// client then acks each delivery as it comes, like a client without
// batching, which is what chatload --ack-delay 0 drives.
func TestNegativeAckDelayAcksEachDelivery(t *testing.T) {
	c, err := client.New(client.Config{URL: "http://127.0.0.1:1", Token: "t", AckDelay: -1})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.AckDelay(); got >= 0 {
		t.Fatalf("AckDelay -1 resolved to %v, want it kept negative", got)
	}
	a, fl := mustRunAcker(t, 0, 1000)
	for i := range 3 {
		a.Add(fmt.Sprint("id", i))
		waitFlush(t, fl)
	}
	fl.mu.Lock()
	defer fl.mu.Unlock()
	if len(fl.batches) != 3 {
		t.Fatalf("got %d ack frames for 3 ids added one at a time, want 3", len(fl.batches))
	}
}
