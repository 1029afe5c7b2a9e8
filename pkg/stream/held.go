package stream

import (
	"cmp"
	"slices"
	"sync"
	"time"

	"github.com/chatd/chatd/pkg/store"
)

// DefaultHold is how many committed entries a leading relay keeps in memory
// (RelayConfig.Hold). A round takes at most Batch of them; the rest is room
// for what commits while a round is out (everything committed while its
// publishes wait for their acks) and for a short stall of the stream.
const DefaultHold = 4096

// held is the hand-off from ingest to the relay: the entries of the batches
// this node committed, keyed by outbox id, so that a round publishes them
// without reading them back from PostgreSQL. PostgreSQL stays the truth: a
// round publishes only ids it has just read from the outbox, reads from the
// table whatever is not held, and deletes by id as before. Holding is only
// an optimisation, so an entry it drops (over the bound, or offered while
// this node does not lead) costs a read, never a message.
//
// Safe for concurrent use: ingest workers offer, the relay takes and prunes.
type held struct {
	max int // the bound; offers beyond it are dropped

	mu      sync.Mutex
	on      bool // this relay leads: offers are kept
	round   uint64
	entries map[int64]heldEntry
}

// heldEntry is one committed row. offered is the round counter at the
// offer: an entry offered before a round's read began is committed before
// that read, so the read sees its row if the row is still in the outbox.
type heldEntry struct {
	msg     store.Accepted
	offered uint64
	at      time.Time // when it was offered, for the settle wait (settle.go)
}

func newHeld(max int) *held {
	return &held{max: max, entries: make(map[int64]heldEntry)}
}

// lead starts (true) or ends (false) keeping offers. Ending drops
// everything held: another node's relay may relay those rows now, and a
// later leadership of this node must not take entries it did not see
// through.
func (h *held) lead(on bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.on = on
	clear(h.entries)
}

// offer keeps the committed entries of batch (duplicates carry no outbox
// row and are skipped) and returns how many it kept and how many it
// dropped because the bound was reached.
func (h *held) offer(batch []store.Accepted, now time.Time) (kept, dropped int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.on {
		return 0, 0
	}
	for i := range batch {
		a := &batch[i]
		if a.Duplicate || a.OutboxID == 0 {
			continue
		}
		if len(h.entries) >= h.max {
			dropped++
			continue
		}
		h.entries[a.OutboxID] = heldEntry{msg: *a, offered: h.round, at: now}
		kept++
	}
	return kept, dropped
}

// len is how many entries are held.
func (h *held) len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.entries)
}

// beginRound marks the start of a round, before its read of the outbox,
// and returns the mark to pass to take.
func (h *held) beginRound() uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.round++
	return h.round
}

// take fills the entries of refs (the outbox rows a round read, in id
// order) that it holds, sets only the id of the others and returns their
// indexes: the round reads them from the table. It also prunes what can no
// longer be in the outbox: an entry offered before the read (mark) whose id
// the read did not return, though it returned a higher id or the whole
// outbox (complete), was relayed, set aside or deleted already.
func (h *held) take(refs []store.OutboxRef, mark uint64, complete bool, out []store.OutboxEntry) (missing []int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i, ref := range refs {
		e, ok := h.entries[ref.ID]
		if !ok {
			out[i] = store.OutboxEntry{ID: ref.ID}
			missing = append(missing, i)
			continue
		}
		out[i] = store.OutboxEntry{ID: ref.ID, Message: e.msg.Message, Recipients: e.msg.Recipients, CreatedAt: ref.CreatedAt}
	}
	var highest int64
	if len(refs) > 0 {
		highest = refs[len(refs)-1].ID
	}
	for id, e := range h.entries {
		if e.offered >= mark {
			continue // may have committed after the read's snapshot
		}
		if (id < highest || complete) && !containsID(refs, id) {
			delete(h.entries, id)
		}
	}
	return missing
}

// offeredAt is when the entry with outbox id was offered; false when it is
// not held.
func (h *held) offeredAt(id int64) (time.Time, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	e, ok := h.entries[id]
	return e.at, ok
}

// drop forgets ids (deleted or set aside).
func (h *held) drop(ids []int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, id := range ids {
		delete(h.entries, id)
	}
}

// containsID reports whether refs (sorted by id) holds id.
func containsID(refs []store.OutboxRef, id int64) bool {
	_, ok := slices.BinarySearchFunc(refs, id, func(r store.OutboxRef, id int64) int { return cmp.Compare(r.ID, id) })
	return ok
}
