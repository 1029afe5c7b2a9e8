package push_test

import (
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chatd/chatd/internal/testwait"
	"github.com/chatd/chatd/pkg/push"
)

// ackingConn acks every message it is handed from its own goroutine, as a
// well-behaved client does over its socket (Deliver runs under the
// registry's lock, so it must not ack inline).
type ackingConn struct {
	user string
	ids  chan string
	got  *atomic.Int64
}

func (c *ackingConn) User() string   { return c.user }
func (c *ackingConn) Device() string { return "" }
func (c *ackingConn) Deliver(m *push.Outgoing) bool {
	select {
	case c.ids <- m.ID:
		return true
	default:
		return false
	}
}
func (c *ackingConn) Flush()            {}
func (c *ackingConn) Close(push.Reason) {}
func (c *ackingConn) UserPresent(bool)  {}

func (c *ackingConn) ackLoop(r *push.Registry, wg *sync.WaitGroup) {
	defer wg.Done()
	for id := range c.ids {
		r.Ack(c, []string{id})
		c.got.Add(1)
	}
}

// The stream → registry → connections path for one message to 1, 100 and
// 1000 connected recipients on this node, against a real JetStream: publish,
// consumer delivery, the pending sets and pins, the acks and the stream
// acks they release. ns/op is per message; deliveries/s counts frames.
func BenchmarkStreamFanOut(b *testing.B) {
	for _, n := range []int{1, 100, 1000} {
		b.Run(fmt.Sprintf("recipients=%d", n), func(b *testing.B) {
			e := mustEnv(b)
			r := mustRegistry(b, e, "bench", func(c *push.Config) {
				c.Lease = 30 * time.Second
				c.MaxPending = 1 << 20
				c.Logger = slog.New(slog.DiscardHandler)
			})
			var got atomic.Int64
			var wg sync.WaitGroup
			users := make([]string, n)
			conns := make([]*ackingConn, n)
			for i := range users {
				users[i] = "u" + strconv.Itoa(i)
				conns[i] = &ackingConn{user: users[i], ids: make(chan string, 1024), got: &got}
				if err := r.Attach(conns[i]); err != nil {
					b.Fatal(err)
				}
				wg.Add(1)
				go conns[i].ackLoop(r, &wg)
			}
			b.Cleanup(func() {
				for _, c := range conns {
					r.Detach(c)
					close(c.ids)
				}
				wg.Wait()
			})
			b.ResetTimer()
			start := time.Now()
			for range b.N {
				e.publish(b, "sender", "", users...)
			}
			want := int64(b.N * n)
			testwait.Until(b, "every delivery acked", func() bool { return got.Load() >= want })
			b.StopTimer()
			b.ReportMetric(float64(want)/time.Since(start).Seconds(), "deliveries/s")
		})
	}
}

// Pin bookkeeping at the default max-pending: the minimum of one
// connection's pending set, taken on every ack and every floor computation.
func BenchmarkPendingPin(b *testing.B) {
	for _, n := range []int{1, 20, 64} {
		b.Run(fmt.Sprintf("pending=%d", n), func(b *testing.B) {
			set := push.NewPendingSetForTest(n)
			b.ResetTimer()
			var sink uint64
			for range b.N {
				low, _ := set.Pin()
				sink += low
			}
			if sink == 0 {
				b.Fatal("no pin")
			}
		})
	}
}
