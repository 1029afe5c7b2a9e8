package store

import (
	"context"
	"fmt"

	"github.com/chatd/chatd"
)

// lockChatsSQL locks the batch's chats, one probe at a time in the order
// of its argument, waiting for any another transaction holds.
const lockChatsSQL = `select c.id, c.last_seq from unnest($1::text[]) as k(id)
	cross join lateral (select id, last_seq from chats c where c.id = k.id for no key update) c`

// lockChatsSkippingSQL locks the batch's chats that no other transaction
// holds; a chat that exists but is held comes back with a NULL last_seq
// (the exists probe reads the committed row without waiting), a chat that
// does not exist not at all.
const lockChatsSkippingSQL = `select k.id, c.last_seq from unnest($1::text[]) as k(id)
	left join lateral (select last_seq from chats c where c.id = k.id for no key update skip locked) c on true
	where c.last_seq is not null or exists (select from chats e where e.id = k.id)`

// commitContended commits, in a transaction of their own, the sends that
// the batch's transaction left out because another transaction held their
// chats, and puts their outcomes in out.
//
// Nodes sharing a database commit the same chats (a pair's two members on
// two nodes): a batch that waited for one chat's lock held all its chats
// before it in the lock order meanwhile, other batches queued behind
// those, and one slow commit held up a chain of them. Measured on a
// three-node cluster, the lock statement waited 18 ms a batch against 0.2
// on one node, and the p99 send→delivered was 887 ms (docs/benchmarks-log.md,
// "Chat locks across nodes"). A first transaction that skips what is held
// never waits; this second one waits only for the chats that were held,
// which their holders have mostly committed by now. A chat's sends are all
// in one of the two transactions, so each chat's seqs stay in batch order.
func (s *Store) commitContended(ctx context.Context, sends []Send, out []Outcome) {
	var idx []int
	for i := range out {
		if out[i].contended {
			idx = append(idx, i)
		}
	}
	if len(idx) == 0 {
		return
	}
	rest := make([]Send, len(idx))
	for j, i := range idx {
		rest[j] = sends[i]
	}
	o, err := s.commitRetrying(ctx, rest, false, false)
	switch {
	case err == nil:
	case rowError(err):
		o = s.isolate(ctx, rest, err)
	default:
		// The first part is committed: these sends alone are refused, and
		// resending them with the same cids is safe.
		failed := fmt.Errorf("commit part of a batch: %v: %w", err, chatd.ErrUnavailable)
		o = make([]Outcome, len(rest))
		for j := range o {
			o[j].Err = failed
		}
	}
	for j, i := range idx {
		out[i] = o[j]
	}
}
