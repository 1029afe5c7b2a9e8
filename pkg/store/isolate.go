package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/chatd/chatd"
	"github.com/jackc/pgx/v5/pgconn"
)

// Batch isolation (docs/architecture.md, invariant 6): one row PostgreSQL
// refuses must not fail the other rows of its group-commit batch. The edge
// refuses every input known to be unstorable (chatd.CheckText), so this is
// the net under it: it costs nothing while batches succeed, and a batch
// that fails for a row is split in halves, recursively, until the rows that
// fail are alone; only their senders are refused.

// rowError reports whether err is PostgreSQL refusing what a row holds
// rather than the transaction, the connection or the server failing: the
// classes below are raised for the values of a row (an encoding, a cast,
// a constraint, a size limit, a trigger's check). Connection (08), resource
// (53), operator (57) and system errors say nothing about a row and keep
// failing the batch; a serialization failure or deadlock (40) is retried
// whole (retryable); syntax and access errors (42) are the statement's,
// the same for every row.
func rowError(err error) bool {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || len(pgErr.Code) != 5 {
		return false
	}
	switch pgErr.Code[:2] {
	case "21", // cardinality: a row meeting another row of the statement
		"22", // data exception: NUL, bad encoding, bad JSON, out of range
		"23", // integrity: unique, check, not null, references
		"54", // program limit: a value too large for an index entry or a field
		"P0": // raised by a PL/pgSQL check
		return true
	}
	return false
}

// isolate answers a batch whose commit failed with err, a rowError: its
// halves are committed apart (settle), so every send that PostgreSQL takes
// is stored, in batch order, and each one it refuses gets chatd.ErrInvalid.
func (s *Store) isolate(ctx context.Context, sends []Send, err error) []Outcome {
	var pgErr *pgconn.PgError
	errors.As(err, &pgErr)
	s.sampled.Warn("a batch failed for one of its rows; committing its other rows without it",
		"sends", len(sends), "sqlstate", pgErr.Code, "err", pgErr.Message)
	out := make([]Outcome, len(sends))
	s.split(ctx, sends, out, err, false)
	return out
}

// split answers sends, whose commit failed with err (a rowError), in out.
// looked reports whether that commit looked up stored (sender, cid) pairs:
// a lone send is refused only once the lookup showed it is not a resend,
// because a resend is answered with its original whatever it holds.
func (s *Store) split(ctx context.Context, sends []Send, out []Outcome, err error, looked bool) {
	if len(sends) == 1 && looked {
		out[0].Err = refusal(err)
		return
	}
	if len(sends) == 1 {
		s.settle(ctx, sends, out)
		return
	}
	mid := len(sends) / 2
	s.settle(ctx, sends[:mid], out[:mid])
	s.settle(ctx, sends[mid:], out[mid:])
}

// settle commits sends as one batch, with the duplicate lookup, and
// answers them in out: splits them further if a row fails, and refuses them
// with chatd.ErrUnavailable if the transaction fails otherwise (nothing of
// them is stored, or, if COMMIT itself failed, the outcome is unknown:
// resending with the same cids is safe, as for a whole batch).
func (s *Store) settle(ctx context.Context, sends []Send, out []Outcome) {
	o, err := s.commitRetrying(ctx, sends, true, false)
	switch {
	case err == nil:
		copy(out, o)
	case rowError(err):
		s.split(ctx, sends, out, err, true)
	default:
		failed := fmt.Errorf("commit part of a batch: %v: %w", err, chatd.ErrUnavailable)
		for i := range out {
			out[i].Err = failed
		}
	}
}

// refusal is the answer to a send PostgreSQL refused alone. It names the
// database's reason, not its DETAIL, which can quote other rows' keys.
func refusal(err error) error {
	var pgErr *pgconn.PgError
	errors.As(err, &pgErr)
	return fmt.Errorf("the database cannot store this message (SQLSTATE %s: %s): "+
		"remove what it cannot hold (a NUL character, text that is not UTF-8) before sending it again: %w",
		pgErr.Code, pgErr.Message, chatd.ErrInvalid)
}
