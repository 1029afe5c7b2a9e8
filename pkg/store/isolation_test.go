package store_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/pkg/store"
	"github.com/oklog/ulid/v2"
)

// poison is a way to make PostgreSQL refuse one row of a batch. The edge
// refuses these before they reach the store; the store must still keep one
// such row from failing the rest of its batch.
type poison struct {
	name string
	make func(snd *store.Send, stored []chatd.Message)
}

var poisons = []poison{
	{"NUL in body", func(snd *store.Send, _ []chatd.Message) { snd.Body = "a\x00b" }},
	{"body not UTF-8", func(snd *store.Send, _ []chatd.Message) { snd.Body = "a\xffb" }},
	{"NUL in device", func(snd *store.Send, _ []chatd.Message) { snd.Device = "ph\x00ne" }},
	{"meta not JSON", func(snd *store.Send, _ []chatd.Message) { snd.Meta = []byte(`{"a":`) }},
	{"NUL in emoji", func(snd *store.Send, stored []chatd.Message) {
		snd.Kind, snd.Target, snd.Body, snd.Emoji, snd.On = chatd.EventReaction, stored[0].ID, "", "\x00", true
	}},
	// A message id already taken: a unique violation other than the
	// (sender, cid) a resend hits.
	{"message id taken", func(snd *store.Send, stored []chatd.Message) { snd.ID = stored[len(stored)-1].ID }},
}

// docs/architecture.md, invariant 6 (batch isolation): batches mixing good
// sends, resends (of earlier batches and within the batch) and random
// poison rows (each a different error PostgreSQL raises for one row) store
// every good send exactly once, in seq order with no gaps, answer every
// resend with its original, and refuse each poison row alone with
// chatd.ErrInvalid; the batch itself never fails.
func TestBatchIsolationPoisonRows(t *testing.T) {
	s, _ := mustOpen(t)
	ctx := context.Background()
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	users := []string{"alice", "bob", "carol"}
	var chats []string
	stored := map[string][]chatd.Message{} // good messages per chat, in commit order
	for range 3 {
		c := mustGroup(t, s, "alice", "bob", "carol")
		chats = append(chats, c.ID)
		stored[c.ID] = []chatd.Message{mustCommit(t, s, sends(c.ID, "alice", "seed-"+c.ID, 1))[0].Message}
	}
	type sent struct {
		snd    store.Send
		poison string         // "" for a good send
		orig   *chatd.Message // a resend of an earlier batch's message
		dupOf  int            // a resend of this batch's send dupOf-1; 0 if none
	}
	var good []chatd.Message // every stored good message, for resends
	for round := range 40 {
		n := 1 + rng.IntN(40)
		batch := make([]sent, n)
		for i := range batch {
			chat := chats[rng.IntN(len(chats))]
			snd := store.Send{ID: ulid.Make().String(), TS: time.Now(), SendRequest: chatd.SendRequest{Chat: chat, From: users[rng.IntN(len(users))], Device: "phone", CID: fmt.Sprintf("r%d-%d", round, i), Body: fmt.Sprintf("round %d send %d", round, i)}}
			switch r := rng.IntN(10); {
			case r < 2:
				p := poisons[rng.IntN(len(poisons))]
				p.make(&snd, stored[chat])
				batch[i] = sent{snd: snd, poison: p.name}
			case r < 3 && i > 0 && batch[i-1].poison == "" && batch[i-1].orig == nil && batch[i-1].dupOf == 0:
				// A resend within the batch of the send before it.
				prev := batch[i-1].snd
				snd.Chat, snd.From, snd.CID, snd.Body = prev.Chat, prev.From, prev.CID, "resent"
				batch[i] = sent{snd: snd, dupOf: i}
			case r < 4 && len(good) > 0:
				// A resend: same sender, chat and cid, new id and body.
				m := good[rng.IntN(len(good))]
				snd.Chat, snd.From, snd.CID, snd.Body = m.Chat, m.From, m.CID, "resent"
				batch[i] = sent{snd: snd, orig: &m}
			default:
				batch[i] = sent{snd: snd}
			}
		}
		sendsOf := make([]store.Send, n)
		for i := range batch {
			sendsOf[i] = batch[i].snd
		}
		out, err := s.CommitBatch(ctx, sendsOf)
		if err != nil {
			t.Fatalf("round %d: commit batch: %v", round, err)
		}
		for i, b := range batch {
			o := out[i]
			switch {
			case b.poison != "":
				if !errors.Is(o.Err, chatd.ErrInvalid) {
					t.Fatalf("round %d send %d (%s): got err %v, want one wrapping chatd.ErrInvalid", round, i, b.poison, o.Err)
				}
			case b.dupOf > 0:
				if want := batch[b.dupOf-1].snd.ID; o.Err != nil || !o.Duplicate || o.Message.ID != want {
					t.Fatalf("round %d send %d (resend of send %d): got %+v, err %v, want a duplicate of %s", round, i, b.dupOf-1, o.Accepted, o.Err, want)
				}
			case b.orig != nil:
				if o.Err != nil || !o.Duplicate || o.Message.ID != b.orig.ID {
					t.Fatalf("round %d send %d (resend of %s): got %+v, err %v, want a duplicate of it", round, i, b.orig.ID, o.Accepted, o.Err)
				}
			default:
				if o.Err != nil || o.Duplicate || o.Message.ID != b.snd.ID {
					t.Fatalf("round %d send %d: got %+v, err %v, want it accepted", round, i, o.Accepted, o.Err)
				}
				good = append(good, o.Message)
				stored[o.Message.Chat] = append(stored[o.Message.Chat], o.Message)
			}
		}
	}
	total := int64(0)
	for _, chat := range chats {
		msgs := stored[chat]
		total += int64(len(msgs))
		for k, m := range msgs {
			if m.Seq != int64(k+1) {
				t.Fatalf("chat %s: message %d has seq %d, want %d (gapless, in commit order)", chat, k, m.Seq, k+1)
			}
			if n := count(t, s, `select count(*) from history where msg_id = $1 and seq = $2 and body = $3`, m.ID, m.Seq, m.Body); n != 1 {
				t.Fatalf("chat %s: message %s stored %d times, want once", chat, m.ID, n)
			}
		}
	}
	if n := count(t, s, `select count(*) from history`); n != total {
		t.Fatalf("history rows: got %d, want %d (the good sends)", n, total)
	}
	if n := count(t, s, `select count(*) from outbox`); n != total {
		t.Fatalf("outbox rows: got %d, want %d (the good sends)", n, total)
	}
}
