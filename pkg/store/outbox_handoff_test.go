package store_test

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/pkg/codec"
)

// The relay publishes a message this node committed from what the commit
// returned (store.Accepted) instead of reading it back: for every kind of
// row, that must encode to the very envelope a read of the outbox gives.
func TestAcceptedEncodesAsTheOutboxRowDoes(t *testing.T) {
	s, _ := mustOpen(t)
	ctx := context.Background()
	c := mustGroup(t, s, "alice", "bob", "carol")
	base := commitOne(t, s, sends(c.ID, "alice", "base", 1)[0])
	if _, err := s.DeleteOutbox(ctx, []int64{base.OutboxID}); err != nil {
		t.Fatal(err)
	}
	batch := sends(c.ID, "bob", "m", 3)
	batch[0].Meta = []byte(`{"n":1e3,"s":"x\u00e9"}`)
	batch[1].Body = "<tag> & \"quotes\" \u2028 \x01"
	batch = append(batch,
		ev(c.ID, "alice", "e1", chatd.EventEdit, base.Message.ID, "edited"),
		react(c.ID, "carol", "r1", base.Message.ID, "👍", true),
		react(c.ID, "bob", "r2", base.Message.ID, "👍", false),
	)
	out := mustCommit(t, s, batch)
	ids := make([]int64, len(out))
	for i, o := range out {
		ids[i] = o.OutboxID
	}
	rows, err := s.ReadOutboxByID(ctx, ids)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(out) {
		t.Fatalf("read %d rows by id, want %d", len(rows), len(out))
	}
	for i, o := range out {
		fromMemory, err := codec.EncodeEnvelope(&chatd.Envelope{OutboxID: o.OutboxID, Message: o.Message, Device: o.Message.Device, Recipients: o.Recipients})
		if err != nil {
			t.Fatal(err)
		}
		e := rows[i]
		fromTable, err := codec.EncodeEnvelope(&chatd.Envelope{OutboxID: e.ID, Message: e.Message, Device: e.Message.Device, Recipients: e.Recipients})
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(fromMemory, fromTable) {
			t.Fatalf("row %d: from memory\n%s\nfrom the table\n%s", i, fromMemory, fromTable)
		}
	}
}

// ReadOutboxIDs lists what ReadOutbox would read, and ReadOutboxByID reads
// the given rows in id order, leaving out those no longer in the outbox.
func TestReadOutboxIDsAndByID(t *testing.T) {
	s, _ := mustOpen(t)
	ctx := context.Background()
	c := mustGroup(t, s, "alice", "bob")
	if refs, err := s.ReadOutboxIDs(ctx, 10); err != nil || len(refs) != 0 {
		t.Fatalf("empty outbox: got %v (%v), want none", refs, err)
	}
	out := mustCommit(t, s, sends(c.ID, "alice", "k", 10))
	if _, err := s.DeleteOutbox(ctx, []int64{out[2].OutboxID}); err != nil {
		t.Fatal(err)
	}
	full, err := s.ReadOutbox(ctx, 6)
	if err != nil {
		t.Fatal(err)
	}
	refs, err := s.ReadOutboxIDs(ctx, 6)
	if err != nil {
		t.Fatal(err)
	}
	if len(refs) != len(full) {
		t.Fatalf("got %d ids, want %d", len(refs), len(full))
	}
	for i := range refs {
		if refs[i].ID != full[i].ID || !refs[i].CreatedAt.Equal(full[i].CreatedAt) {
			t.Fatalf("ref %d: got %+v, want id %d created %v", i, refs[i], full[i].ID, full[i].CreatedAt)
		}
	}
	want := []int64{out[1].OutboxID, out[4].OutboxID, out[9].OutboxID}
	rows, err := s.ReadOutboxByID(ctx, []int64{out[9].OutboxID, out[2].OutboxID, out[1].OutboxID, out[4].OutboxID})
	if err != nil {
		t.Fatal(err)
	}
	got := make([]int64, len(rows))
	for i, e := range rows {
		got[i] = e.ID
	}
	if !slices.Equal(got, want) {
		t.Fatalf("by id: got %v, want %v (id order, the deleted row left out)", got, want)
	}
}

// BenchmarkReadOutbox compares a relay round's reads: the full read of the
// oldest rows (joined with history) against the read of their ids alone,
// which is all a round needs for the rows it holds in memory.
func BenchmarkReadOutbox(b *testing.B) {
	s, _ := mustOpen(b)
	c := mustGroup(b, s, "alice", "bob")
	for i := range 8 {
		mustCommit(b, s, sends(c.ID, "alice", fmt.Sprint("b", i), 32))
	}
	ctx := context.Background()
	const rows = 256
	for _, tc := range []struct {
		name string
		read func() (int, error)
	}{
		{"full", func() (int, error) { e, err := s.ReadOutbox(ctx, rows); return len(e), err }},
		{"ids", func() (int, error) { r, err := s.ReadOutboxIDs(ctx, rows); return len(r), err }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if n, err := tc.read(); err != nil || n != rows {
					b.Fatalf("read %d rows (%v), want %d", n, err, rows)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*rows), "µs/row")
		})
	}
}
