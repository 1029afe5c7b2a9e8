package ingest_test

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/pkg/ingest"
	"github.com/chatd/chatd/pkg/store"
)

// timedCommitter records the latency of every CommitBatch call.
type timedCommitter struct {
	s  *store.Store
	mu sync.Mutex
	d  []time.Duration
}

func (c *timedCommitter) CommitBatch(ctx context.Context, sends []store.Send) ([]store.Outcome, error) {
	start := time.Now()
	out, err := c.s.CommitBatch(ctx, sends)
	c.mu.Lock()
	c.d = append(c.d, time.Since(start))
	c.mu.Unlock()
	return out, err
}

func (c *timedCommitter) percentile(p float64) time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.d) == 0 {
		return 0
	}
	sort.Slice(c.d, func(i, j int) bool { return c.d[i] < c.d[j] })
	return c.d[int(p*float64(len(c.d)-1))]
}

// BenchmarkGroupCommit measures the accept path's throughput (msgs/s) and the
// p50/p99 latency of one commit, at batch sizes 1, 36 and 256 with 1 and 4
// concurrent batches, 1:1 chats spread over 100 pairs.
func BenchmarkGroupCommit(b *testing.B) {
	for _, batch := range []int{1, 36, 256} {
		for _, workers := range []int{1, 4} {
			b.Run(fmt.Sprintf("batch=%d/workers=%d", batch, workers), func(b *testing.B) {
				benchGroupCommit(b, batch, workers)
			})
		}
	}
}

func benchGroupCommit(b *testing.B, batch, workers int) {
	s, err := store.Open(context.Background(), testpgDSN(b), store.Config{MaxConns: 8})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	const pairs = 100
	chats := make([]string, pairs)
	for i := range chats {
		c, _, err := s.DirectChat(context.Background(), fmt.Sprint("a", i), fmt.Sprint("b", i))
		if err != nil {
			b.Fatal(err)
		}
		chats[i] = c.ID
	}
	tc := &timedCommitter{s: s}
	in, err := ingest.New(ingest.Config{Store: tc, BatchSize: batch, Workers: workers, QueueSize: 100000, BatchDelay: 2 * time.Millisecond})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = in.Run(ctx) }()
	defer func() { cancel(); <-done }()

	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	window := make(chan struct{}, batch*workers*2)
	for i := 0; i < b.N; i++ {
		window <- struct{}{}
		wg.Add(1)
		p := i % pairs
		req := chatd.SendRequest{Chat: chats[p], From: fmt.Sprint("a", p), Device: "d", CID: fmt.Sprint("k", i), Body: "benchmark message body"}
		if err := in.Submit(req, func(r chatd.SendResult) {
			if r.Err != nil {
				b.Error(r.Err)
			}
			<-window
			wg.Done()
		}); err != nil {
			b.Fatal(err)
		}
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "msgs/s")
	b.ReportMetric(float64(tc.percentile(0.50).Microseconds()), "p50-commit-µs")
	b.ReportMetric(float64(tc.percentile(0.99).Microseconds()), "p99-commit-µs")
}
