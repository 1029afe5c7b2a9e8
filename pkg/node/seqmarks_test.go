package node

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/chatd/chatd/internal/testlog"
	"github.com/chatd/chatd/internal/testnats"
	"github.com/chatd/chatd/internal/testpg"
	"github.com/chatd/chatd/pkg/store"
)

// The marks keep each chat's highest seq (an older frame arriving late
// never lowers it) and the highest outbox id, and forget a chat only
// seqMarkKeep after its last message.
func TestSeqMarksKeepTheHighest(t *testing.T) {
	now := time.Unix(0, 0)
	m := newSeqMarks(func() time.Time { return now })
	m.note("a", 5, 10)
	m.note("a", 3, 8) // a redelivery of an older message
	m.note("b", 1, 11)
	hw := m.snapshot()
	if hw.Seqs["a"] != 5 || hw.Seqs["b"] != 1 || hw.OutboxID != 11 {
		t.Fatalf("got %+v, want a:5 b:1 outbox 11", hw)
	}

	now = now.Add(seqMarkKeep - time.Minute)
	m.note("b", 2, 12)
	now = now.Add(2 * time.Minute) // a's mark is now older than seqMarkKeep
	m.note("c", 1, 13)
	hw = m.snapshot()
	if _, ok := hw.Seqs["a"]; ok {
		t.Errorf("a kept past seqMarkKeep: %+v", hw)
	}
	if hw.Seqs["b"] != 2 || hw.Seqs["c"] != 1 || hw.OutboxID != 13 {
		t.Errorf("got %+v, want b:2 c:1 outbox 13", hw)
	}

	// Without a stream the node's high water is its marks.
	n := &Node{marks: m}
	got, err := n.highWater(context.Background())
	if err != nil || got.Seqs["b"] != 2 || got.OutboxID != 13 {
		t.Errorf("highWater: got %+v, %v", got, err)
	}
}

// A stream the node cannot read at start is warned about as a start, not
// as a PostgreSQL failover that never happened, and the warning says what
// to check; the node still starts on its own marks.
func TestStartWarnsOfAnUnreadableStreamAsAStart(t *testing.T) {
	ctx := context.Background()
	var logs testlog.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	st, err := store.Open(ctx, testpg.NewDatabase(t), store.Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	n := &Node{marks: newSeqMarks(time.Now), js: testnats.JetStream(t), Store: st, log: log}
	n.cfg.Stream.Name = "NOT_CREATED"
	if err := n.raiseToStream(ctx); err != nil {
		t.Fatalf("raiseToStream without a readable stream: %v, want the node's own marks used", err)
	}
	got := logs.String()
	if strings.Contains(got, "failover") || !strings.Contains(got, "when=\"at start\"") || !strings.Contains(got, "NOT_CREATED") {
		t.Errorf("start-up warning for an unreadable stream:\n%s\nwant it said to happen at start, naming the stream to check, and no failover", got)
	}
}
