package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/internal/rusage"
	"github.com/chatd/chatd/pkg/store"
	"github.com/oklog/ulid/v2"
)

// BenchmarkCommitBatch measures group commit: one op is one batch of size
// messages into a 3-member chat. msgs/s is the throughput of one committer;
// cpu-µs/msg is this process's CPU per message (pgx's encoding, the wire
// and our plan, not PostgreSQL's own, which runs in its backends): the
// least chatd's side of the accept path costs at that batch size.
func BenchmarkCommitBatch(b *testing.B) {
	for _, size := range []int{1, 36, 256} {
		b.Run(fmt.Sprintf("batch=%d", size), func(b *testing.B) {
			s, _ := mustOpen(b)
			c := mustGroup(b, s, "alice", "bob", "carol")
			batch := make([]store.Send, size)
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := rusage.SelfCPUSeconds()
			n := 0
			for b.Loop() {
				for i := range batch {
					batch[i] = store.Send{ID: ulid.Make().String(), TS: time.Now(), SendRequest: chatd.SendRequest{Chat: c.ID, From: "alice", Device: "phone", CID: fmt.Sprintf("c%d", n), Body: "hello, this is a benchmark message"}}
					n++
				}
				if _, err := s.CommitBatch(ctx, batch); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "msgs/s")
			b.ReportMetric((rusage.SelfCPUSeconds()-cpu0)*1e6/float64(n), "cpu-µs/msg")
		})
	}
}
