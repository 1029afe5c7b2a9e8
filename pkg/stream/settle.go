package stream

import (
	"time"

	"github.com/chatd/chatd/pkg/store"
)

// DefaultSettleWait is RelayConfig.SettleWait's default: above the ~100 ms
// within which the protocol asks clients to ack, far below the lease.
const DefaultSettleWait = 250 * time.Millisecond

// Settler is the node's live delivery as the relay of a node alone on the
// stream asks it before it publishes: whether a message is settled (every
// connection the fast path handed it to acked it or left live delivery, the
// fast path reached every registered recipient connection, and no other
// consumer has read the stream since), and when the relay is done with
// messages. *push.Registry implements it.
type Settler interface {
	// Settled reports whether message id is settled and, if so, whether
	// it was taken: it reached every recipient live, each but its sender
	// having had a connection handed its frame (read only with
	// RelayConfig.TakenPrefix set). One call, one lock, per row.
	Settled(id string) (settled, taken bool)
	// Forget is told of every message whose row left the outbox: skipped
	// were never published, published went to the stream (in this round
	// or an earlier one).
	Forget(skipped, published []string)
}

// When the node is alone on the stream (docs/architecture.md, "Settled on
// one node": no other node can join and no other consumer reads it), the
// stream carries a message only to this node's own connections, and the
// fast path has already handed it to every one of them that was registered;
// a connection registered later reads it from history after its `hello`.
// So a message all those connections acked needs nothing the stream gives
// (a lease, redelivery, a pin), and the relay deletes its row without
// publishing it, which spares the publish, the consumer's delivery, push's
// ack and the file store, which the stream's hop costs chatd for every
// message (docs/benchmarks-log.md, "One node
// keeps settled messages out of the stream (2026-12-03, 16:58–18:10 UTC)").
// A message that is not settled within SettleWait of its commit is
// published as before, and its stream delivery starts the lease: the same
// path as without a Settler, SettleWait later. Whether the node is alone is
// the Settler's to know; a relay given none publishes everything. With
// TakenPrefix (webhooks, which need every event) a settled message is
// published too, and those every recipient took live under TakenPrefix,
// which live delivery does not read: the stream then spares live delivery,
// not the endpoints.

// fate is what a round does with an entry.
type fate uint8

const (
	// publish: to SubjectPrefix, for every consumer.
	publish fate = iota
	// skip: settled, kept out of the stream.
	skip
	// taken: settled and taken live by every recipient, published to
	// TakenPrefix, which live delivery and the notifier do not read.
	taken
)

// settle sorts out a round's entries (in id order) when a Settler is set:
// a settled entry is kept out of the stream (skip), or published under
// TakenPrefix when that is set (taken when every recipient took it live,
// publish otherwise); an unsettled one the relay was handed less than
// SettleWait ago ends the round's prefix there, and anything else is
// published. It returns the prefix the round handles, its fates, and
// whether it cut the round short (the relay then waits settleTick before
// the next round rather than a commit's wake-up).
func (r *Relay) settle(entries []store.OutboxEntry) (prefix []store.OutboxEntry, fates []fate, cut bool) {
	now := r.cfg.Now()
	fates = make([]fate, 0, len(entries))
	for i := range entries {
		e := &entries[i]
		// Once handed to the stream (a round whose acks timed out, or
		// whose delete failed) a row is published again, under the same
		// subject, never skipped: its stream delivery may still come.
		if f, sent := r.sent[e.ID]; sent {
			fates = append(fates, f)
			continue
		}
		if settled, took := r.cfg.Settler.Settled(e.Message.ID); settled {
			switch {
			case r.cfg.TakenPrefix == "":
				fates = append(fates, skip)
			case took:
				fates = append(fates, taken)
			default:
				fates = append(fates, publish)
			}
			continue
		}
		if at, ok := r.held.offeredAt(e.ID); ok && now.Sub(at) < r.cfg.SettleWait {
			return entries[:i], fates, true
		}
		fates = append(fates, publish)
	}
	return entries, fates, false
}

// settleTick is how long a relay that cut its round waits before the next:
// an eighth of the wait, so an unsettled message goes out within about
// SettleWait and an eighth, and a busy node's rounds each take many rows.
func (r *Relay) settleTick() time.Duration {
	return min(max(r.cfg.SettleWait/8, 5*time.Millisecond), 50*time.Millisecond)
}
