package store_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/pkg/store"
	"github.com/oklog/ulid/v2"
)

// ev builds one event send.
func ev(chat, from, cid string, kind chatd.EventKind, target, body string) store.Send {
	return store.Send{ID: ulid.Make().String(), TS: time.Now(), SendRequest: chatd.SendRequest{Chat: chat, From: from, Device: "phone", CID: cid, Kind: kind, Target: target, Body: body}}
}

func react(chat, from, cid, target, emoji string, on bool) store.Send {
	s := ev(chat, from, cid, chatd.EventReaction, target, "")
	s.Emoji, s.On = emoji, on
	return s
}

// commitOne commits one send and returns its outcome.
func commitOne(t *testing.T, s *store.Store, snd store.Send) store.Outcome {
	t.Helper()
	out, err := s.CommitBatch(context.Background(), []store.Send{snd})
	if err != nil {
		t.Fatalf("commit: %v", err)
	}
	return out[0]
}

func mustMessage(t *testing.T, s *store.Store, chat, id string) chatd.Message {
	t.Helper()
	m, err := s.Message(context.Background(), chat, id)
	if err != nil {
		t.Fatalf("message %s: %v", id, err)
	}
	return m
}

func TestEventRules(t *testing.T) {
	s, _ := mustOpen(t)
	c := mustGroup(t, s, "alice", "bob")
	other := mustGroup(t, s, "alice", "bob")
	msg := mustFill(t, s, c.ID, "alice", 1)[0]
	foreign := mustFill(t, s, other.ID, "alice", 1)[0]
	edit := commitOne(t, s, ev(c.ID, "alice", "e1", chatd.EventEdit, msg.ID, "v2"))
	if edit.Err != nil {
		t.Fatal(edit.Err)
	}
	gone := mustCommit(t, s, sends(c.ID, "alice", "gone", 1))[0].Message
	if o := commitOne(t, s, ev(c.ID, "alice", "d1", chatd.EventDelete, gone.ID, "")); o.Err != nil {
		t.Fatal(o.Err)
	}
	tests := []struct {
		name string
		send store.Send
		want error
	}{
		{"edit by another member", ev(c.ID, "bob", "x1", chatd.EventEdit, msg.ID, "b"), chatd.ErrForbidden},
		{"delete by another member", ev(c.ID, "bob", "x2", chatd.EventDelete, msg.ID, ""), chatd.ErrForbidden},
		{"edit by non-member", ev(c.ID, "eve", "x3", chatd.EventEdit, msg.ID, "b"), chatd.ErrForbidden},
		{"unknown target", ev(c.ID, "alice", "x4", chatd.EventEdit, ulid.Make().String(), "b"), chatd.ErrNotFound},
		{"target in another chat", ev(c.ID, "alice", "x5", chatd.EventEdit, foreign.ID, "b"), chatd.ErrNotFound},
		{"react to another chat", react(c.ID, "bob", "x6", foreign.ID, "👍", true), chatd.ErrNotFound},
		{"edit of an edit event", ev(c.ID, "alice", "x7", chatd.EventEdit, edit.Message.ID, "b"), chatd.ErrInvalid},
		{"react to an edit event", react(c.ID, "bob", "x8", edit.Message.ID, "👍", true), chatd.ErrInvalid},
		{"edit of a deleted message", ev(c.ID, "alice", "x9", chatd.EventEdit, gone.ID, "b"), chatd.ErrInvalid},
		{"delete of a deleted message", ev(c.ID, "alice", "x10", chatd.EventDelete, gone.ID, ""), chatd.ErrInvalid},
		{"react to a deleted message", react(c.ID, "bob", "x11", gone.ID, "👍", true), chatd.ErrInvalid},
		{"react by another member", react(c.ID, "bob", "ok1", msg.ID, "👍", true), nil},
		{"edit from another device", func() store.Send {
			e := ev(c.ID, "alice", "ok2", chatd.EventEdit, msg.ID, "v3")
			e.Device = "laptop"
			return e
		}(), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := lastSeq(t, s, c.ID)
			o := commitOne(t, s, tt.send)
			if !errors.Is(o.Err, tt.want) || (tt.want == nil) != (o.Err == nil) {
				t.Fatalf("got %v, want %v", o.Err, tt.want)
			}
			want := before
			if tt.want == nil {
				want++
			}
			if got := lastSeq(t, s, c.ID); got != want {
				t.Fatalf("last_seq: got %d, want %d (refused events take no seq)", got, want)
			}
		})
	}
}

func lastSeq(t *testing.T, s *store.Store, chat string) int64 {
	t.Helper()
	c, err := s.Chat(context.Background(), chat)
	if err != nil {
		t.Fatal(err)
	}
	return c.LastSeq
}

func TestDeleteErasesTextMetaAndReactions(t *testing.T) {
	s, _ := mustOpen(t)
	c := mustGroup(t, s, "alice", "bob")
	m := sends(c.ID, "alice", "m", 1)[0]
	m.Body, m.Meta = "secret one", []byte(`{"reply_to":"x"}`)
	msg := mustCommit(t, s, []store.Send{m})[0].Message
	mustCommit(t, s, []store.Send{
		ev(c.ID, "alice", "e1", chatd.EventEdit, msg.ID, "secret two"),
		react(c.ID, "bob", "r1", msg.ID, "👍", true),
	})
	// An edit and the delete in one batch: the edit is erased too.
	mustCommit(t, s, []store.Send{
		ev(c.ID, "alice", "e2", chatd.EventEdit, msg.ID, "secret three"),
		ev(c.ID, "alice", "d1", chatd.EventDelete, msg.ID, ""),
	})
	if n := count(t, s, `select count(*) from history where chat_id = $1 and body like 'secret%'`, c.ID); n != 0 {
		t.Fatalf("rows still holding text: got %d, want 0", n)
	}
	if n := count(t, s, `select count(*) from history where msg_id = $1 and meta is null and reactions is null and deleted`, msg.ID); n != 1 {
		t.Fatalf("deleted row with meta and reactions erased: got %d, want 1", n)
	}
	got := mustMessage(t, s, c.ID, msg.ID)
	if !got.Deleted || got.Body != "" || got.Meta != nil || got.Reactions != nil {
		t.Fatalf("deleted message: got %+v", got)
	}
	if n := count(t, s, `select count(*) from history where chat_id = $1 and kind = 'edit'`, c.ID); n != 2 {
		t.Fatalf("edit events kept in the log: got %d, want 2", n)
	}
}

func TestEventIdempotencyAndCIDConflictAcrossKinds(t *testing.T) {
	s, _ := mustOpen(t)
	c := mustGroup(t, s, "alice", "bob")
	other := mustGroup(t, s, "alice")
	msg := mustFill(t, s, c.ID, "alice", 1)[0]
	first := commitOne(t, s, ev(c.ID, "alice", "k", chatd.EventEdit, msg.ID, "v2"))
	if first.Err != nil {
		t.Fatal(first.Err)
	}
	// A resend with other fields is still the original.
	again := commitOne(t, s, ev(c.ID, "alice", "k", chatd.EventEdit, msg.ID, "different"))
	if again.Err != nil || !again.Duplicate || again.Message.ID != first.Message.ID || again.Message.Seq != first.Message.Seq {
		t.Fatalf("resend: got %+v, want duplicate of %+v", again, first.Message)
	}
	for _, snd := range []store.Send{
		ev(c.ID, "alice", "k", chatd.EventDelete, msg.ID, ""),
		react(c.ID, "alice", "k", msg.ID, "👍", true),
		sends(c.ID, "alice", "k", 1)[0], // a message with the edit's cid (cid "k-0" below)
		ev(other.ID, "alice", "k", chatd.EventEdit, msg.ID, "v2"),
	} {
		if snd.Kind == "" {
			snd.CID = "k"
		}
		if o := commitOne(t, s, snd); !errors.Is(o.Err, chatd.ErrCIDConflict) {
			t.Fatalf("%s with a used cid: got %v, want cid conflict", snd.Kind.Normal(), o.Err)
		}
	}
	// The same in one batch: the second kind conflicts with the first.
	out, err := s.CommitBatch(context.Background(), []store.Send{
		react(c.ID, "bob", "b1", msg.ID, "👍", true),
		ev(c.ID, "bob", "b1", chatd.EventDelete, msg.ID, ""),
	})
	if err != nil || out[0].Err != nil || !errors.Is(out[1].Err, chatd.ErrCIDConflict) {
		t.Fatalf("same cid, two kinds in one batch: got %v, %+v", err, out)
	}
	if got := mustMessage(t, s, c.ID, msg.ID); got.Body != "v2" || got.EditedAt == nil || got.Deleted {
		t.Fatalf("edited message: got %+v", got)
	}
}

func TestReactionsAreSets(t *testing.T) {
	s, _ := mustOpen(t)
	c := mustGroup(t, s, "alice", "bob", "carol")
	msg := mustFill(t, s, c.ID, "alice", 1)[0]
	mustCommit(t, s, []store.Send{
		react(c.ID, "carol", "r1", msg.ID, "👍", true),
		react(c.ID, "bob", "r2", msg.ID, "👍", true),
		react(c.ID, "bob", "r3", msg.ID, "👍", true), // again: no change
		react(c.ID, "alice", "r4", msg.ID, "❤", true),
		react(c.ID, "carol", "r5", msg.ID, "🎉", false), // never added
	})
	want := map[string][]string{"👍": {"bob", "carol"}, "❤": {"alice"}}
	if got := mustMessage(t, s, c.ID, msg.ID).Reactions; !reflect.DeepEqual(got, want) {
		t.Fatalf("reactions: got %v, want %v", got, want)
	}
	mustCommit(t, s, []store.Send{react(c.ID, "alice", "r6", msg.ID, "❤", false)})
	mustCommit(t, s, []store.Send{react(c.ID, "alice", "r7", msg.ID, "❤", false)})
	want = map[string][]string{"👍": {"bob", "carol"}}
	if got := mustMessage(t, s, c.ID, msg.ID).Reactions; !reflect.DeepEqual(got, want) {
		t.Fatalf("reactions after removal: got %v, want %v", got, want)
	}
	if got := lastSeq(t, s, c.ID); got != 8 {
		t.Fatalf("last_seq: got %d, want 8 (every reaction event is stored)", got)
	}
}

func TestHistoryShowsEventsAndCurrentState(t *testing.T) {
	s, _ := mustOpen(t)
	c := mustGroup(t, s, "alice", "bob")
	m := sends(c.ID, "alice", "m", 1)[0]
	m.Meta = []byte(`{"n":1e3,"a":[1.50,"<&>"]}`)
	msg := mustCommit(t, s, []store.Send{m})[0].Message
	mustCommit(t, s, []store.Send{ev(c.ID, "alice", "e", chatd.EventEdit, msg.ID, "new body")})
	mustCommit(t, s, []store.Send{react(c.ID, "bob", "r", msg.ID, "👍", true)})
	page, _, err := s.History(context.Background(), c.ID, chatd.HistoryQuery{})
	if err != nil {
		t.Fatal(err)
	}
	if len(page) != 3 {
		t.Fatalf("history: got %d events, want 3", len(page))
	}
	h := page[0]
	if h.Body != "new body" || h.EditedAt == nil || string(h.Meta) != string(m.Meta) ||
		!reflect.DeepEqual(h.Reactions, map[string][]string{"👍": {"bob"}}) || h.Kind != "" {
		t.Fatalf("message in history: got %+v", h)
	}
	if e := page[1]; e.Kind != chatd.EventEdit || e.Target != msg.ID || e.Body != "new body" || e.Seq != 2 {
		t.Fatalf("edit event: got %+v", e)
	}
	if r := page[2]; r.Kind != chatd.EventReaction || r.Emoji != "👍" || r.On == nil || !*r.On || r.Seq != 3 {
		t.Fatalf("reaction event: got %+v", r)
	}
	if _, err := s.Message(context.Background(), c.ID, ulid.Make().String()); !errors.Is(err, chatd.ErrNotFound) {
		t.Fatalf("unknown message: got %v, want not found", err)
	}
}

// Messages and events from concurrent senders to one chat share one gapless
// seq log.
func TestSeqGaplessWithEventsInterleaved(t *testing.T) {
	s, _ := mustOpen(t)
	c := mustGroup(t, s, "alice", "bob", "carol")
	var base []chatd.Message
	for _, o := range mustCommit(t, s, sends(c.ID, "alice", "base", 5)) {
		base = append(base, o.Message)
	}
	const perSender, senders = 30, 3
	var wg sync.WaitGroup
	errs := make(chan error, senders)
	for w := range senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			user := []string{"alice", "bob", "carol"}[w]
			for i := range perSender {
				cid := fmt.Sprintf("%s-%d", user, i)
				var snd store.Send
				switch i % 3 {
				case 0:
					snd = sends(c.ID, user, cid, 1)[0]
					snd.CID = cid
				case 1:
					snd = react(c.ID, user, cid, base[i%5].ID, "👍", i%2 == 0)
				default:
					if user == "alice" {
						snd = ev(c.ID, user, cid, chatd.EventEdit, base[i%5].ID, cid)
					} else {
						snd = react(c.ID, user, cid, base[i%5].ID, "x", true)
					}
				}
				out, err := s.CommitBatch(context.Background(), []store.Send{snd})
				if err == nil {
					err = out[0].Err
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	n := int64(5 + perSender*senders)
	if got := count(t, s, `select count(*) from history where chat_id = $1 and seq between 1 and $2`, c.ID, n); got != n {
		t.Fatalf("seqs 1..%d: got %d rows", n, got)
	}
	if got := lastSeq(t, s, c.ID); got != n {
		t.Fatalf("last_seq: got %d, want %d", got, n)
	}
}
