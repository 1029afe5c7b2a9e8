package store_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/internal/testpg"
	"github.com/chatd/chatd/pkg/store"
	"github.com/jackc/pgx/v5"
)

// roundTrips counts what a connection sends and then waits for: each
// statement run on its own and each pipelined batch.
type roundTrips struct{ n atomic.Int64 }

func (r *roundTrips) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	r.n.Add(1)
	return ctx
}

func (r *roundTrips) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (r *roundTrips) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	r.n.Add(1)
	return ctx
}

func (r *roundTrips) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}

func (r *roundTrips) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

// A batch commits in three round trips whatever it holds: BEGIN goes with
// the reads and the target updates with the inserts. On a saturated box each
// round trip waited 20-100 ms for the scheduler, so every extra one was
// latency for all the batch's senders; pgx's Begin and one statement per
// target update cost four (messages) or five (events).
func TestCommitBatchTakesThreeRoundTrips(t *testing.T) {
	rt := &roundTrips{}
	s, err := store.Open(context.Background(), testpg.NewDatabase(t), store.Config{Logger: quiet, Tracer: rt, MaxConns: 1})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(s.Close)
	c := mustGroup(t, s, "alice", "bob")
	// The first batch also prepares its statements on the connection.
	msgs := mustCommit(t, s, sends(c.ID, "alice", "warm", 6))
	events := func(cid string, m []store.Outcome) []store.Send {
		react := ev(c.ID, "bob", cid+"-r", chatd.EventReaction, m[1].Message.ID, "")
		react.Emoji, react.On = "👍", true
		return []store.Send{
			ev(c.ID, "alice", cid+"-e", chatd.EventEdit, m[0].Message.ID, "edited"),
			react,
			ev(c.ID, "alice", cid+"-d", chatd.EventDelete, m[2].Message.ID, ""),
		}
	}
	tests := []struct {
		name          string
		warm, measure []store.Send
	}{
		{"messages", sends(c.ID, "alice", "m1", 5), sends(c.ID, "alice", "m2", 5)},
		{"events", events("x", msgs[:3]), events("y", msgs[3:])},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mustCommit(t, s, tt.warm) // prepares the statements this kind of batch adds
			rt.n.Store(0)
			mustCommit(t, s, tt.measure)
			if n := rt.n.Load(); n != 3 {
				t.Fatalf("round trips for one batch: got %d, want 3 (begin+reads, writes, commit)", n)
			}
		})
	}
}
