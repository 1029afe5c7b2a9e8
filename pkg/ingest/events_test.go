package ingest_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/pkg/ingest"
	"github.com/chatd/chatd/pkg/store"
)

// Event input is checked once, in ingest, before anything is queued.
func TestSubmitChecksEvents(t *testing.T) {
	s := mustStore(t)
	chat := mustGroup(t, s, "alice", "bob")
	in := mustIngest(t, s, nil)
	target := "01HZZZZZZZZZZZZZZZZZZZZZZZ"
	base := chatd.SendRequest{Chat: chat, From: "alice", Device: "d", CID: "k"}
	with := func(f func(*chatd.SendRequest)) chatd.SendRequest { r := base; f(&r); return r }
	tests := []struct {
		name string
		req  chatd.SendRequest
		want error
	}{
		{"meta not an object", with(func(r *chatd.SendRequest) { r.Body, r.Meta = "hi", []byte(`[1]`) }), chatd.ErrInvalid},
		{"meta not JSON", with(func(r *chatd.SendRequest) { r.Body, r.Meta = "hi", []byte(`{x`) }), chatd.ErrInvalid},
		{"meta over 2048", with(func(r *chatd.SendRequest) {
			r.Body, r.Meta = "hi", []byte(`{"a":"`+strings.Repeat("x", 2043)+`"}`)
		}), chatd.ErrTooLarge},
		{"edit without target", with(func(r *chatd.SendRequest) { r.Kind, r.Body = chatd.EventEdit, "b" }), chatd.ErrInvalid},
		{"edit without body", with(func(r *chatd.SendRequest) { r.Kind, r.Target = chatd.EventEdit, target }), chatd.ErrInvalid},
		{"edit with meta", with(func(r *chatd.SendRequest) {
			r.Kind, r.Target, r.Body, r.Meta = chatd.EventEdit, target, "b", []byte(`{}`)
		}), chatd.ErrInvalid},
		{"empty emoji", with(func(r *chatd.SendRequest) { r.Kind, r.Target = chatd.EventReaction, target }), chatd.ErrInvalid},
		{"emoji over 32 bytes", with(func(r *chatd.SendRequest) {
			r.Kind, r.Target, r.Emoji = chatd.EventReaction, target, strings.Repeat("👍", 9)
		}), chatd.ErrTooLarge},
		{"unknown kind", with(func(r *chatd.SendRequest) { r.Kind, r.Target = "poke", target }), chatd.ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := in.Submit(tt.req, func(chatd.SendResult) { t.Error("done called for a refused request") })
			if !errors.Is(err, tt.want) {
				t.Fatalf("got %v, want %v", err, tt.want)
			}
		})
	}
}

// An event goes through the accept path like a message: committed, answered,
// and handed to the fast path with its fields; meta of exactly 2048 bytes is
// taken and stored compacted.
func TestEventsThroughIngest(t *testing.T) {
	s := mustStore(t)
	chat := mustGroup(t, s, "alice", "bob")
	committed := make(chan store.Accepted, 8)
	in := mustIngest(t, s, func(c *ingest.Config) {
		c.OnCommit = func(a []store.Accepted) {
			for _, x := range a {
				committed <- x
			}
		}
	})
	ctx := ctxT(t, 10*time.Second)
	meta := `{ "a" : "` + strings.Repeat("x", 2048-12) + `" }`
	msg, err := in.Send(ctx, chatd.SendRequest{Chat: chat, From: "alice", Device: "d", CID: "m", Body: "hi", Meta: []byte(meta)})
	if err != nil || msg.Err != nil {
		t.Fatalf("send with meta of %d bytes: %v %v", len(meta), err, msg.Err)
	}
	<-committed
	r, err := in.Send(ctx, chatd.SendRequest{Chat: chat, From: "bob", Device: "d", CID: "r", Kind: chatd.EventReaction,
		Target: msg.Message.ID, Emoji: "👍", On: true})
	if err != nil || r.Err != nil || r.Message.Seq != 2 {
		t.Fatalf("react: %v %+v", err, r)
	}
	a := <-committed
	if a.Message.Kind != chatd.EventReaction || a.Message.Target != msg.Message.ID || a.Message.On == nil || !*a.Message.On {
		t.Fatalf("fast path got %+v", a.Message)
	}
	got, err := s.Message(ctx, chat, msg.Message.ID)
	if err != nil || string(got.Meta) != strings.ReplaceAll(strings.ReplaceAll(meta, " : ", ":"), " ", "") {
		t.Fatalf("stored meta: %s (%v)", got.Meta, err)
	}
}

// Messages and events from concurrent senders, group-committed together,
// share one gapless seq log: history holds seq 1..N with no gap.
func TestEventsAndMessagesInterleavedStayGapless(t *testing.T) {
	s := mustStore(t)
	chat := mustGroup(t, s, "alice", "bob", "carol")
	in := mustIngest(t, s, nil)
	ctx := ctxT(t, 30*time.Second)
	first, err := in.Send(ctx, chatd.SendRequest{Chat: chat, From: "alice", Device: "d", CID: "first", Body: "hi"})
	if err != nil || first.Err != nil {
		t.Fatalf("first: %v %v", err, first.Err)
	}
	const each = 40
	errs := make(chan error, 3)
	for _, user := range []string{"alice", "bob", "carol"} {
		go func() {
			for i := range each {
				req := chatd.SendRequest{Chat: chat, From: user, Device: "d", CID: user + "-" + strconv.Itoa(i), Body: "m"}
				switch {
				case i%2 == 1:
					req.Kind, req.Target, req.Body, req.Emoji, req.On = chatd.EventReaction, first.Message.ID, "", "x", i%4 == 1
				case user == "alice" && i%4 == 2:
					req.Kind, req.Target = chatd.EventEdit, first.Message.ID
				}
				r, err := in.Send(ctx, req)
				if err == nil {
					err = r.Err
				}
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range 3 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	msgs, _, err := s.History(ctx, chat, chatd.HistoryQuery{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 1+3*each {
		t.Fatalf("history: got %d events, want %d", len(msgs), 1+3*each)
	}
	for i, m := range msgs {
		if m.Seq != int64(i+1) {
			t.Fatalf("event %d has seq %d: a gap", i, m.Seq)
		}
	}
}
