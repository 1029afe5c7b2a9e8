package node

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/chatd/chatd/pkg/store"
	"github.com/chatd/chatd/pkg/stream"
)

// seqMarkKeep is how long a chat's mark outlives its last message. A
// failover's lost commits are the last moments before the primary died;
// the promotion may come much later (an operator decides), so the marks
// must outlast any plausible wait for it.
const seqMarkKeep = 6 * time.Hour

// highWaterScan bounds the read of the delivery stream after a failover;
// sends wait for it.
const highWaterScan = 10 * time.Second

// seqMarks remembers the highest seq per chat and the highest outbox id
// this node has seen committed (its own commits) or delivered (every
// node's, through its consumer). Clients may hold those messages; after a
// failover to a standby that missed them, the store raises its counters
// past these marks so that no seq or outbox id is handed out twice
// (store.HighWater). Safe for concurrent use.
type seqMarks struct {
	now func() time.Time

	mu     sync.Mutex
	chats  map[string]seqMark
	outbox int64
	pruned time.Time
}

type seqMark struct {
	seq int64
	at  time.Time
}

func newSeqMarks(now func() time.Time) *seqMarks {
	return &seqMarks{now: now, chats: map[string]seqMark{}, pruned: now()}
}

// note records that chat's message seq went out with outbox id outboxID.
func (m *seqMarks) note(chat string, seq, outboxID int64) {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	if cur, ok := m.chats[chat]; !ok || seq >= cur.seq {
		m.chats[chat] = seqMark{seq: seq, at: now}
	}
	m.outbox = max(m.outbox, outboxID)
	if now.Sub(m.pruned) > time.Minute {
		m.pruneLocked(now)
	}
}

// seed records every mark of hw.
func (m *seqMarks) seed(hw store.HighWater) {
	for chat, seq := range hw.Seqs {
		m.note(chat, seq, 0)
	}
	m.mu.Lock()
	m.outbox = max(m.outbox, hw.OutboxID)
	m.mu.Unlock()
}

func (m *seqMarks) pruneLocked(now time.Time) {
	for chat, mk := range m.chats {
		if now.Sub(mk.at) > seqMarkKeep {
			delete(m.chats, chat)
		}
	}
	m.pruned = now
}

// snapshot is a copy of the marks.
func (m *seqMarks) snapshot() store.HighWater {
	m.mu.Lock()
	defer m.mu.Unlock()
	hw := store.HighWater{Seqs: make(map[string]int64, len(m.chats)), OutboxID: m.outbox}
	for chat, mk := range m.chats {
		hw.Seqs[chat] = mk.seq
	}
	return hw
}

// highWater is the store's HighWater hook after a PostgreSQL failover: the
// node's marks and what the delivery stream holds (other nodes' commits
// this node has not taken from its consumer yet). Without the stream (NATS
// down too) the marks alone are used rather than refusing sends until NATS
// is back.
func (n *Node) highWater(ctx context.Context) (store.HighWater, error) {
	return n.readHighWater(ctx, "after a PostgreSQL failover")
}

// readHighWater is highWater for the moment named by when, which its
// warning carries: the same read runs at start (raiseToStream).
func (n *Node) readHighWater(ctx context.Context, when string) (store.HighWater, error) {
	hw := n.marks.snapshot()
	if n.js == nil {
		return hw, nil
	}
	sctx, cancel := context.WithTimeout(ctx, highWaterScan)
	defer cancel()
	name := n.cfg.Stream.Name
	if name == "" {
		name = stream.DefaultName
	}
	fromStream, err := stream.HighWater(sctx, n.js, name)
	if err != nil {
		n.log.Warn("cannot read the delivery stream's seqs; chats' next seqs rest on this node's own marks: check that NATS and the stream answer", "stream", name, "when", when, "err", err)
	}
	for chat, seq := range fromStream.Seqs {
		hw.Seqs[chat] = max(hw.Seqs[chat], seq)
	}
	hw.OutboxID = max(hw.OutboxID, fromStream.OutboxID)
	return hw, nil
}

// raiseToStream runs once at start, before any send is taken: it raises
// every chat's next seq past what the delivery stream holds, and seeds the
// marks with it. A node that was down while PostgreSQL failed over (or
// that starts on a database restored from a backup) has no marks of its
// own; the stream still holds what some consumer has not acked. When
// nothing was lost this changes nothing: the stream only carries what the
// database committed.
func (n *Node) raiseToStream(ctx context.Context) error {
	hw, err := n.readHighWater(ctx, "at start")
	if err != nil {
		return err
	}
	n.marks.seed(hw)
	chats, err := n.Store.Raise(ctx, hw)
	if err != nil {
		return fmt.Errorf("raise seqs past the delivery stream: %w", err)
	}
	if chats > 0 {
		n.log.Warn("the delivery stream holds seqs the database never handed out (a PostgreSQL failover or restore lost them); chats' next seq raised past them, so the loss shows as a gap", "chats_raised", chats)
	}
	return nil
}
