package client

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/pkg/wire"
)

// BenchmarkReadMsg is the per-delivery path after the socket read: decode a
// msg frame, queue its ack, dedupe and order it, and hand it to a consumer
// on Events (chatload runs it once per message per recipient).
func BenchmarkReadMsg(b *testing.B) {
	for _, size := range []int{64, 1024} {
		b.Run("body"+strconv.Itoa(size), func(b *testing.B) {
			const chat, n = "chat_bench", 4096
			frames := make([][]byte, n)
			ts := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
			for i := range frames {
				m := chatd.Message{ID: "01HZX6Q8ZK5J0Y3W2V1T0S9R8Q", CID: "run_1_" + strconv.Itoa(i), Chat: chat, From: "alice",
					Body: strings.Repeat("x", size), Seq: int64(i + 1), TS: ts}
				frames[i] = wire.AppendMsg(nil, &m)
			}
			c, s := benchSession(b)
			go func() {
				for range c.events {
				}
			}()
			defer close(c.events)
			ctx := context.Background()
			var f wire.ServerFrame
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if err := wire.DecodeServerFrame(frames[i], &f); err != nil {
					b.Fatal(err)
				}
				s.handle(ctx, &f)
				if i++; i == n {
					// Everything is handed out (handle queued it): the
					// next round starts again from seq 1.
					s.acker.drain()
					c.tracker.untrack(chat)
					i = 0
				}
			}
		})
	}
}

// BenchmarkAccepted is the answer to one send: the pending record made and
// registered, the accepted frame decoded and matched to it, the sender's own
// copy merged, and the answer returned (chatload runs it once per send).
func BenchmarkAccepted(b *testing.B) {
	const chat = "chat_bench"
	c, s := benchSession(b)
	ts := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	ctx := context.Background()
	go func() {
		for range c.events {
		}
	}()
	defer close(c.events)
	var f wire.ServerFrame
	var buf []byte
	b.ReportAllocs()
	seq := int64(0)
	for b.Loop() {
		seq++
		cid := "run_1_" + strconv.Itoa(int(seq))
		p := c.newPending()
		p.cid, p.chat, p.body = cid, chat, "hello"
		p.frame = wire.ClientFrame{Type: wire.FrameSend, Chat: chat, CID: cid, Body: "hello"}
		if err := c.addPending(p); err != nil {
			b.Fatal(err)
		}
		buf = wire.AppendAccepted(buf[:0], &chatd.Message{ID: "01HZX6Q8ZK5J0Y3W2V1T0S9R8Q", CID: cid, Seq: seq, TS: ts})
		if err := wire.DecodeServerFrame(buf, &f); err != nil {
			b.Fatal(err)
		}
		s.handle(ctx, &f)
		if acc, err := c.finish(p, <-p.result); err != nil || acc.Seq != seq {
			b.Fatalf("got %+v, %v; want seq %d", acc, err, seq)
		}
		c.dropPending(p)
		c.recycle(p)
	}
}

// benchSession is a client and a session without a connection: enough for
// the read path, whose writes (acks, fetches) the benchmarks do not reach.
func benchSession(b *testing.B) (*Client, *session) {
	b.Helper()
	c, err := New(Config{URL: "http://127.0.0.1:1", Token: "t", AckDelay: time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	s := &session{c: c, user: "alice", device: "bench", done: make(chan struct{}), inflight: make(map[string]int)}
	s.acker = newAcker(time.Hour, 1000, func([]string) error { return nil })
	s.syncer = newSyncer(s)
	return c, s
}
