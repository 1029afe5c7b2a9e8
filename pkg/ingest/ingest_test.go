package ingest_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/pkg/ingest"
	"github.com/chatd/chatd/pkg/store"
)

// docs/architecture.md, invariant 5, through the whole accept path: 8
// concurrent senders × 2,000 messages into one chat get seqs exactly 1..16,000,
// and a reader paging by after_seq while they commit never skips one (seq order
// is commit order).
func TestConcurrentSendersGetGaplessSeqsAndReaderMissesNone(t *testing.T) {
	const senders, each = 8, 2000
	s := mustStore(t)
	members := users(senders)
	chat := mustGroup(t, s, members...)
	in := mustIngest(t, s, nil)

	stop := make(chan struct{})
	readerDone := make(chan error, 1)
	go func() { readerDone <- pageUntil(s, chat, senders*each, stop) }()

	var wg sync.WaitGroup
	seqs := make(chan int64, senders*each)
	errs := make(chan error, senders)
	for i := 0; i < senders; i++ {
		wg.Add(1)
		go func(user string) {
			defer wg.Done()
			errs <- sendMany(in, chat, user, each, seqs)
		}(members[i])
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	close(seqs)
	seen := make(map[int64]bool)
	for seq := range seqs {
		if seen[seq] {
			t.Fatalf("seq %d accepted twice", seq)
		}
		seen[seq] = true
	}
	for want := int64(1); want <= senders*each; want++ {
		if !seen[want] {
			t.Fatalf("seq %d missing from %d accepted", want, len(seen))
		}
	}
	if err := <-readerDone; err != nil {
		t.Fatal(err)
	}
	close(stop)
}

// sendMany keeps up to 64 sends in flight for one sender and reports each seq.
func sendMany(in *ingest.Ingest, chat, user string, n int, seqs chan<- int64) error {
	sem := make(chan struct{}, 64)
	var failed atomic.Value
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		sem <- struct{}{}
		wg.Add(1)
		req := chatd.SendRequest{Chat: chat, From: user, Device: "d", CID: fmt.Sprintf("c%d", i), Body: "x"}
		for {
			err := in.Submit(req, func(r chatd.SendResult) {
				defer wg.Done()
				defer func() { <-sem }()
				if r.Err != nil {
					failed.Store(r.Err)
					return
				}
				seqs <- r.Message.Seq
			})
			if errors.Is(err, chatd.ErrOverloaded) {
				time.Sleep(time.Millisecond)
				continue
			}
			if err != nil {
				return err
			}
			break
		}
	}
	wg.Wait()
	if err, ok := failed.Load().(error); ok {
		return err
	}
	return nil
}

// pageUntil reads the chat by after_seq while it is written, checking each
// page continues exactly where the last ended, until it has read total.
func pageUntil(s *store.Store, chat string, total int64, stop <-chan struct{}) error {
	var after int64
	deadline := time.Now().Add(2 * time.Minute)
	for after < total {
		if time.Now().After(deadline) {
			return fmt.Errorf("reader stuck at seq %d of %d", after, total)
		}
		msgs, _, err := s.History(context.Background(), chat, chatd.HistoryQuery{AfterSeq: after, Limit: 500})
		if err != nil {
			return err
		}
		for _, m := range msgs {
			if m.Seq != after+1 {
				return fmt.Errorf("reader after seq %d got seq %d: a committed seq was skipped", after, m.Seq)
			}
			after = m.Seq
		}
		if len(msgs) == 0 {
			select {
			case <-stop:
				return fmt.Errorf("reader stopped at seq %d of %d", after, total)
			case <-time.After(2 * time.Millisecond):
			}
		}
	}
	return nil
}

// A resend with the same cid is answered with the original and stored once.
func TestResendSameCIDAnsweredWithOriginal(t *testing.T) {
	s := mustStore(t)
	chat := mustGroup(t, s, "alice", "bob")
	in := mustIngest(t, s, nil)
	ctx := ctxT(t, 10*time.Second)
	req := chatd.SendRequest{Chat: chat, From: "alice", Device: "d", CID: "k1", Body: "hello"}
	first, err := in.Send(ctx, req)
	if err != nil || first.Err != nil {
		t.Fatalf("first send: %v %v", err, first.Err)
	}
	again, err := in.Send(ctx, req)
	if err != nil || again.Err != nil {
		t.Fatalf("resend: %v %v", err, again.Err)
	}
	if !again.Duplicate || again.Message.ID != first.Message.ID || again.Message.Seq != first.Message.Seq {
		t.Fatalf("resend: got %+v dup=%v, want the original %s seq %d", again.Message, again.Duplicate, first.Message.ID, first.Message.Seq)
	}
	msgs, _, err := s.History(ctx, chat, chatd.HistoryQuery{})
	if err != nil || len(msgs) != 1 {
		t.Fatalf("history: %d messages (%v), want 1", len(msgs), err)
	}
}

// Bad input gets a clear error, is not queued, and changes nothing.
func TestSubmitRejectsBadInput(t *testing.T) {
	s := mustStore(t)
	chat := mustGroup(t, s, "alice", "bob")
	in := mustIngest(t, s, func(c *ingest.Config) { c.MaxBodyBytes = 8 })
	ok := chatd.SendRequest{Chat: chat, From: "alice", Device: "d", CID: "k", Body: "hi"}
	tests := []struct {
		name string
		edit func(*chatd.SendRequest)
		want error
	}{
		{"empty body", func(r *chatd.SendRequest) { r.Body = "" }, chatd.ErrInvalid},
		{"body too large", func(r *chatd.SendRequest) { r.Body = strings.Repeat("x", 9) }, chatd.ErrTooLarge},
		{"invalid utf8", func(r *chatd.SendRequest) { r.Body = "\xff\xfe" }, chatd.ErrInvalid},
		{"bad cid", func(r *chatd.SendRequest) { r.CID = "a b" }, chatd.ErrInvalid},
		{"long cid", func(r *chatd.SendRequest) { r.CID = strings.Repeat("k", 65) }, chatd.ErrInvalid},
		{"bad chat", func(r *chatd.SendRequest) { r.Chat = "" }, chatd.ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := ok
			tt.edit(&req)
			err := in.Submit(req, func(chatd.SendResult) { t.Error("done called for a rejected submit") })
			if !errors.Is(err, tt.want) {
				t.Fatalf("got %v, want %v", err, tt.want)
			}
		})
	}
	ctx := ctxT(t, 10*time.Second)
	for _, tc := range []struct {
		chat, from string
		want       error
	}{{"nochat", "alice", chatd.ErrNotFound}, {chat, "mallory", chatd.ErrForbidden}} {
		r, err := in.Send(ctx, chatd.SendRequest{Chat: tc.chat, From: tc.from, Device: "d", CID: "k2", Body: "hi"})
		if err != nil || !errors.Is(r.Err, tc.want) {
			t.Fatalf("send to %s as %s: got %v / %v, want %v", tc.chat, tc.from, err, r.Err, tc.want)
		}
	}
	if msgs, _, _ := s.History(ctx, chat, chatd.HistoryQuery{}); len(msgs) != 0 {
		t.Fatalf("rejected sends stored %d messages", len(msgs))
	}
}

// A full inbound queue rejects with ErrOverloaded instead of blocking or
// swallowing the send.
func TestFullQueueRejectsOverloaded(t *testing.T) {
	s := mustStore(t)
	chat := mustGroup(t, s, "alice", "bob")
	// Not running: nothing drains the queue of 2.
	in, err := ingest.New(ingest.Config{Store: s, QueueSize: 2})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		if err := in.Submit(chatd.SendRequest{Chat: chat, From: "alice", Device: "d", CID: fmt.Sprint("k", i), Body: "x"}, func(chatd.SendResult) {}); err != nil {
			t.Fatal(err)
		}
	}
	err = in.Submit(chatd.SendRequest{Chat: chat, From: "alice", Device: "d", CID: "k3", Body: "x"}, func(chatd.SendResult) {})
	if !errors.Is(err, chatd.ErrOverloaded) {
		t.Fatalf("third submit into a full queue: got %v, want ErrOverloaded", err)
	}
}

// Shutdown commits and answers everything already queued, then refuses new sends.
func TestShutdownDrainsQueue(t *testing.T) {
	s := mustStore(t)
	chat := mustGroup(t, s, "alice", "bob")
	in, err := ingest.New(ingest.Config{Store: s})
	if err != nil {
		t.Fatal(err)
	}
	var answered atomic.Int32
	const n = 100
	for i := 0; i < n; i++ {
		req := chatd.SendRequest{Chat: chat, From: "alice", Device: "d", CID: fmt.Sprint("k", i), Body: "x"}
		if err := in.Submit(req, func(r chatd.SendResult) {
			if r.Err == nil {
				answered.Add(1)
			}
		}); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // already stopping: Run must still commit the queue
	if err := in.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if got := answered.Load(); got != n {
		t.Fatalf("accepted %d of %d queued before shutdown", got, n)
	}
	if err := in.Submit(chatd.SendRequest{Chat: chat, From: "alice", Device: "d", CID: "late", Body: "x"}, func(chatd.SendResult) {}); !errors.Is(err, chatd.ErrClosed) {
		t.Fatalf("submit after shutdown: got %v, want ErrClosed", err)
	}
}
