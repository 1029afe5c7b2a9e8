package store

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/pkg/codec"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
)

// Send is one event handed to CommitBatch: the client's request, which the
// caller (ingest) has checked (chatd.SendRequest.Check), with the ULID and
// timestamp the caller assigned.
type Send struct {
	chatd.SendRequest
	ID string
	TS time.Time
	// MaxEnvelopeBytes bounds the send's encoded stream envelope (see
	// codec.EnvelopeSize), checked with the chat's members as they
	// are at commit; over it the send is refused with chatd.ErrTooLarge.
	// A message the broker refuses would stop the relay at its row for every
	// chat. 0 means unchecked.
	MaxEnvelopeBytes int
}

// Accepted is a stored message. For a Duplicate, Message is the original as
// first stored (its id, seq and ts) and OutboxID and Recipients are zero: the
// original acceptance already fanned it out. Recipients slices may be shared
// between outcomes of one chat and must not be modified.
type Accepted struct {
	Message    chatd.Message
	OutboxID   int64
	Recipients []string
	Duplicate  bool
	// Forwarded: the node whose relay leads committed it on this node's
	// behalf (pkg/forward), and its relay was handed it there; this node's
	// relay has nothing to do for it.
	Forwarded bool
}

// Outcome is the result of one Send. Err is per message: chatd.ErrNotFound
// (unknown chat), chatd.ErrForbidden (sender not a member),
// chatd.ErrCIDConflict (the cid names the sender's message in another chat),
// chatd.ErrTooLarge (the envelope would exceed Send.MaxEnvelopeBytes),
// chatd.ErrInvalid (PostgreSQL refused the row: see CommitBatch) or
// chatd.ErrUnavailable (its part of a batch split by CommitBatch failed:
// resend with the same cid); the message was not stored and Accepted is
// zero.
type Outcome struct {
	Accepted
	Err error

	// contended: the send's chat was locked by another transaction, so the
	// attempt left it for a transaction of its own (see commitContended).
	contended bool
}

// CommitBatch stores a batch of sends in one transaction (group commit) and
// returns one Outcome per send, in sends order. It is safe to call
// concurrently: batches lock their chats in id order, so they cannot deadlock
// on chat rows, and the chats another transaction holds are committed after
// the others, in a second transaction (commitContended).
//
// A send whose (From, CID) is already stored for the same chat, or was
// accepted earlier in the same batch, is a Duplicate of the original; the
// same (From, CID) for another chat is refused with chatd.ErrCIDConflict.
// Every other accepted send gets the next seq of its chat (gapless, in commit
// order: docs/architecture.md, invariant 5), a history row and then its outbox
// row with the chat's members frozen as recipients (invariant 1).
//
// A row PostgreSQL refuses (any error of the classes rowError names: a NUL
// in a text, a value a constraint refuses) does not fail the batch
// (docs/architecture.md, invariant 6): the batch is committed again in
// parts without it, and that send alone is refused with chatd.ErrInvalid.
// Once parts of a batch have committed, a part whose transaction then
// fails for another reason is refused with chatd.ErrUnavailable, send by
// send, and the call returns no error.
//
// An error means the transaction failed and nothing of the batch is stored
// (or, if COMMIT itself failed, the outcome is unknown: resending with the
// same cids is always safe).
//
// The first attempt does not look for stored (sender, cid) pairs: almost
// every send is new, and the insert checks the pair anyway through its
// unique index, so the lookup was a second probe of the same index for
// every message (docs/benchmarks-log.md,
// "PostgreSQL's statements per batch, and a collation bug they showed
// (2026-12-03, 13:17–15:05 UTC)"). The insert skips a resend's row (ON
// CONFLICT DO NOTHING rather than a unique violation: a resend is routine,
// and the server would log the violation as an error) and the attempt is
// abandoned; the batch is then committed again with the lookup, which
// reports the duplicate (or, for another chat, the conflict).
// So is a batch that refused a send (not a member, no such chat...): a
// resend's duplicate or conflict is its answer before any refusal. A
// concurrent batch that stores the same pair between the lookup and the
// insert, or a deadlock, gets one more attempt with the lookup.
func (s *Store) CommitBatch(ctx context.Context, sends []Send) ([]Outcome, error) {
	if len(sends) == 0 {
		return nil, nil
	}
	out, err := s.commitRetrying(ctx, sends, false, true)
	if err != nil && rowError(err) {
		return s.isolate(ctx, sends, err), nil
	}
	if err != nil {
		return nil, fmt.Errorf("commit batch: %w", err)
	}
	s.commitContended(ctx, sends, out)
	return out, nil
}

// commitRetrying commits sends in one transaction, retrying with the
// duplicate lookup when an attempt failed for want of it (retryable). With
// skipLocked, the sends to chats another transaction holds are left out
// (their outcomes marked contended) instead of waited for.
func (s *Store) commitRetrying(ctx context.Context, sends []Send, findDuplicates, skipLocked bool) ([]Outcome, error) {
	out, err := s.commitOnce(ctx, sends, findDuplicates, skipLocked)
	for attempt := 0; attempt < 2 && err != nil && retryable(err); attempt++ {
		out, err = s.commitOnce(ctx, sends, true, skipLocked)
	}
	return out, err
}

// errLookUpDuplicates ends a first attempt, made without the duplicate
// lookup, that refused a send (see commitOnce).
var errLookUpDuplicates = errors.New("a send was refused: look up duplicates first")

// errCIDStored ends an attempt whose insert skipped a send because its
// (sender, cid) was already stored: a resend, or a concurrent batch stored
// it after the lookup.
var errCIDStored = errors.New("a send's (sender, cid) is already stored: look up duplicates first")

// retryable reports an error another attempt, with the duplicates looked
// up, resolves: the (sender, cid) was already stored (a resend, or a
// concurrent batch stored it first), or two such batches deadlocked on it
// (or PostgreSQL, run at a stricter isolation level, reports a
// serialization failure: the transaction's, not a row's, so it is retried
// whole), or a send was refused before its duplicate could be found.
func retryable(err error) bool {
	if errors.Is(err, errLookUpDuplicates) || errors.Is(err, errCIDStored) {
		return true
	}
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return false
	}
	return pgErr.Code == "40P01" || pgErr.Code == "40001" ||
		(pgErr.Code == "23505" && pgErr.ConstraintName == "history_sender_cid_key")
}

// commitOnce runs the transaction in three round trips: BEGIN with the
// reads (load), the writes (write), and COMMIT. pgx's Begin would add a
// round trip of its own, and on a busy box every round trip is a wait for
// the database to answer and for this goroutine to be scheduled again:
// measured under load in groups, BEGIN alone was a long wait while batches
// queued behind it (docs/benchmarks-log.md, "Why
// group sends waited a second, and chatload's share of the box
// (2026-12-01)"). COMMIT stays a round trip of its own, sent only once
// every write succeeded: pipelined after the writes, it would run even when
// this side gave up on the batch (a cancelled context closes the
// connection, but PostgreSQL executes what it already received), and a
// failed batch must store nothing (G1).
//
// With findDuplicates the reads also look up which sends are already stored.
func (s *Store) commitOnce(ctx context.Context, sends []Send, findDuplicates, skipLocked bool) ([]Outcome, error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("begin: %w", err)
	}
	committed := false
	defer func() {
		if !committed {
			// The transaction is open or aborted; without the rollback the
			// pool would close the connection on release.
			_, _ = conn.Exec(context.WithoutCancel(ctx), "rollback")
		}
		conn.Release()
	}()
	p := newCommitPlan(sends)
	p.findDuplicates = findDuplicates
	p.skipLocked = skipLocked
	if err := p.load(ctx, conn); err != nil {
		return nil, err
	}
	p.assign()
	if !p.findDuplicates && p.refusedAny() {
		// A refused send may be a resend, whose answer is its duplicate
		// or cid conflict rather than the refusal: only the lookup tells.
		return nil, errLookUpDuplicates
	}
	if len(p.fresh) > 0 {
		if err := p.write(ctx, conn); err != nil {
			return nil, err
		}
	}
	if _, err := conn.Exec(ctx, "commit"); err != nil {
		return nil, fmt.Errorf("commit: %w", err)
	}
	committed = true
	p.resolveDuplicates()
	return p.out, nil
}

// pipeline is what the commit's round trips need of a connection.
type pipeline interface {
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// sendKey is the idempotency key of a send.
type sendKey struct{ from, cid string }

// commitPlan is one attempt at committing a batch: what the database holds
// for it, and the outcome each send will get.
type commitPlan struct {
	sends   []Send
	out     []Outcome
	chatIDs []string // distinct, sorted: the lock order

	findDuplicates bool                      // look up stored (sender, cid) pairs (see CommitBatch)
	skipLocked     bool                      // leave out chats another transaction holds (see commitContended)
	contended      map[string]bool           // chats left out because another transaction held them
	existing       map[sendKey]chatd.Message // already stored (step a); empty unless findDuplicates
	lastSeq        map[string]int64          // locked chats and their counters (step b)
	members        map[string][]string       // sorted members of each locked chat (step c)
	targets        map[string]*target        // messages the batch's events refer to (step d)

	historyIDs, outboxIDs int8Array // drawn in load, one each per send; the fresh sends take them in order

	recipientsSize map[string]int // encoded size of each chat's members, for checkEnvelope

	fresh []int // indexes of sends to insert, in batch order
	dupOf []int // dupOf[i] = j when send i repeats an earlier send j of this batch; else -1
}

func newCommitPlan(sends []Send) *commitPlan {
	ids := make([]string, len(sends))
	for i := range sends {
		ids[i] = sends[i].Chat
	}
	slices.Sort(ids)
	return &commitPlan{
		sends:   sends,
		out:     make([]Outcome, len(sends)),
		chatIDs: slices.Compact(ids),
		fresh:   make([]int, 0, len(sends)),
		dupOf:   make([]int, len(sends)),
	}
}

// load begins the transaction, locks the batch's chats, finds already stored
// (sender, cid) pairs if asked to, reads the members of the chats and draws
// the ids the batch's rows may take, in one round trip. The lock goes first
// so the dedupe lookup sees whatever a batch that held the lock just
// committed.
func (p *commitPlan) load(ctx context.Context, conn pipeline) error {
	b := &pgx.Batch{}
	b.Queue("begin")
	// Fixed order: concurrent batches cannot deadlock on chat rows. The
	// rows are locked one probe at a time in the order of p.chatIDs (sorted
	// by bytes in newCommitPlan), the same order in every batch.
	// FOR NO KEY UPDATE, not FOR UPDATE: it serialises seq allocation just
	// the same (it conflicts with itself) but not with the key-share locks
	// that inserts referencing a chat take (read_state, members), so a read
	// batch, whatever the order of its marks, never deadlocks a commit.
	// Probes, not "id = any($1)" (see probeNote).
	if p.skipLocked {
		b.Queue(lockChatsSkippingSQL, textArray(p.chatIDs))
	} else {
		b.Queue(lockChatsSQL, textArray(p.chatIDs))
	}
	if p.findDuplicates {
		froms := make(textArray, len(p.sends))
		cids := make(textArray, len(p.sends))
		for i := range p.sends {
			froms[i], cids[i] = p.sends[i].From, p.sends[i].CID
		}
		b.Queue(`select h.sender, h.cid, h.msg_id, h.chat_id, h.device, h.body, h.seq, h.created_at, h.kind
			from unnest($1::text[], $2::text[]) as k(sender, cid)
			cross join lateral (
				select * from history h where h.sender = k.sender and h.cid = k.cid limit 1) h`, froms, cids)
	}
	// Unordered: the members are sorted below, by bytes, as assign's
	// binary search needs whatever the database's collation is.
	b.Queue(`select m.chat_id, m.user_id from unnest($1::text[]) as k(id)
		cross join lateral (select chat_id, user_id from members m where m.chat_id = k.id) m`, textArray(p.chatIDs))
	// Ids for the rows the batch may insert, one pair per send (see
	// queueInsert). After the lock: a batch that waited for a chat's lock
	// gets ids above those of the batch it waited for, as when the ids
	// were drawn by the insert itself.
	b.Queue(`select nextval('history_id_seq'), nextval('outbox_id_seq') from generate_series(1, $1::int)`, len(p.sends))
	// A batch of messages alone (most batches) has no targets to read.
	targets := p.targetIDs()
	if len(targets) > 0 {
		b.Queue(targetsSQL, targets)
	}
	br := conn.SendBatch(ctx, b)
	defer br.Close()
	if _, err := br.Exec(); err != nil {
		return fmt.Errorf("begin: %w", err)
	}

	// Scan targets are declared once for all rows, outside the closures:
	// passed to Scan through an interface, each variable (and each
	// argument list) would otherwise be a heap allocation per row.
	var (
		id   pgtype.DriverBytes // a chat of the batch, found in p.chatIDs
		seq  pgtype.Int8        // NULL: the chat exists but another transaction holds it
		user string
	)
	lockDest := []any{&id, &seq}
	k := 0 // where the last row's chat was in p.chatIDs
	p.lastSeq = make(map[string]int64, len(p.chatIDs))
	if err := readRows(br, "lock chats", func(r pgx.Rows) error {
		if err := r.Scan(lockDest...); err != nil {
			return err
		}
		if k = chatIndex(p.chatIDs, k, id); k < 0 {
			return fmt.Errorf("locked chat %q, which the batch did not ask for", id)
		}
		if !seq.Valid {
			if p.contended == nil {
				p.contended = make(map[string]bool)
			}
			p.contended[p.chatIDs[k]] = true
			return nil
		}
		p.lastSeq[p.chatIDs[k]] = seq.Int64
		return nil
	}); err != nil {
		return err
	}
	if p.findDuplicates {
		p.existing = make(map[sendKey]chatd.Message)
		if err := readRows(br, "find duplicates", func(r pgx.Rows) error {
			var m chatd.Message
			err := r.Scan(&m.From, &m.CID, &m.ID, &m.Chat, &m.Device, &m.Body, &m.Seq, &m.TS, &m.Kind)
			m.TS, m.Kind = m.TS.UTC(), storedKind(m.Kind)
			p.existing[sendKey{m.From, m.CID}] = m
			return err
		}); err != nil {
			return err
		}
	}
	p.members = make(map[string][]string, len(p.chatIDs))
	memberDest := []any{&id, &user}
	k = 0
	if err := readRows(br, "load members", func(r pgx.Rows) error {
		if err := r.Scan(memberDest...); err != nil {
			return err
		}
		if k = chatIndex(p.chatIDs, k, id); k < 0 {
			return fmt.Errorf("member of chat %q, which the batch did not ask for", id)
		}
		p.members[p.chatIDs[k]] = append(p.members[p.chatIDs[k]], user)
		return nil
	}); err != nil {
		return err
	}
	for _, users := range p.members {
		slices.Sort(users)
	}
	p.historyIDs = make(int8Array, 0, len(p.sends))
	p.outboxIDs = make(int8Array, 0, len(p.sends))
	var historyID, outboxID int64
	idDest := []any{&historyID, &outboxID}
	if err := readRows(br, "draw ids", func(r pgx.Rows) error {
		err := r.Scan(idDest...)
		p.historyIDs, p.outboxIDs = append(p.historyIDs, historyID), append(p.outboxIDs, outboxID)
		return err
	}); err != nil {
		return err
	}
	if len(p.outboxIDs) != len(p.sends) {
		return fmt.Errorf("draw ids: %d for %d sends", len(p.outboxIDs), len(p.sends))
	}
	// Outbox ids in batch order, whatever order the rows came in.
	slices.Sort(p.outboxIDs)
	p.targets = make(map[string]*target, len(targets))
	if len(targets) > 0 {
		if err := p.loadTargets(br); err != nil {
			return err
		}
	}
	if err := br.Close(); err != nil {
		return fmt.Errorf("load batch: %w", err)
	}
	return nil
}

// chatIndex is the index of chat in ids, or -1, looking from index from
// on first: the probes return a chat's rows in ids' order, one chat after
// another (the nested loop over unnest), and a row is found anyway if a
// plan ever returned them in another order.
func chatIndex(ids []string, from int, chat []byte) int {
	for k := range ids {
		if k := (from + k) % len(ids); ids[k] == string(chat) {
			return k
		}
	}
	return -1
}

// probeNote: the hot-path statements look rows up through a correlated
// subquery (lateral ..., or a scalar subquery) instead of a plain join or
// "= any($1)". A plain join lets the planner pick a hash join that scans all
// of history when its statistics are stale (a young database, or a cached
// generic plan made while the table was small): measured here, the dedupe
// and outbox statements then grew linearly with the table. "= any($1)" over
// a small table (a small site's chats and members) is a sequential scan
// that compares every row with every element of the array, slower than
// index probes even there (docs/benchmarks-log.md, "PostgreSQL's statements per batch, and a collation bug they showed
// (2026-12-03, 13:17–15:05 UTC)"). The correlated form is an index probe
// per key.

// readRows reads the next result of a pipelined batch row by row.
func readRows(br pgx.BatchResults, what string, scan func(pgx.Rows) error) error {
	rows, err := br.Query()
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	defer rows.Close()
	for rows.Next() {
		if err := scan(rows); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// refusedAny reports whether assign refused a send.
func (p *commitPlan) refusedAny() bool {
	for i := range p.out {
		if p.out[i].Err != nil {
			return true
		}
	}
	return false
}

// assign decides every outcome and allocates seqs, in batch order per chat.
func (p *commitPlan) assign() {
	first := make(map[sendKey]int, len(p.sends))
	for i := range p.sends {
		snd := &p.sends[i]
		p.dupOf[i] = -1
		if p.contended[snd.Chat] {
			p.out[i].contended = true
			continue
		}
		k := sendKey{snd.From, snd.CID}
		if m, ok := p.existing[k]; ok {
			if m.Chat != snd.Chat || m.Kind.Normal() != snd.Kind.Normal() {
				p.out[i].Err = cidConflict(snd)
				continue
			}
			p.out[i].Accepted = Accepted{Message: m, Duplicate: true}
			continue
		}
		if j, ok := first[k]; ok {
			if p.sends[j].Chat != snd.Chat || p.sends[j].Kind.Normal() != snd.Kind.Normal() {
				p.out[i].Err = cidConflict(snd)
				continue
			}
			p.dupOf[i] = j
			continue
		}
		last, ok := p.lastSeq[snd.Chat]
		if !ok {
			p.out[i].Err = fmt.Errorf("chat %s: %w", snd.Chat, chatd.ErrNotFound)
			continue
		}
		mem := p.members[snd.Chat]
		if _, ok := slices.BinarySearch(mem, snd.From); !ok && !snd.System {
			p.out[i].Err = fmt.Errorf("%s is not a member of %s: %w", snd.From, snd.Chat, chatd.ErrForbidden)
			continue
		}
		tg, err := p.checkTarget(snd)
		if err != nil {
			p.out[i].Err = err
			continue
		}
		if err := p.checkEnvelope(snd, last+1, mem); err != nil {
			p.out[i].Err = err
			continue
		}
		// Only an accepted send claims its cid in this batch: a refused one
		// stores nothing, so its cid stays free, as it would across batches.
		first[k] = i
		last++
		p.lastSeq[snd.Chat] = last
		p.out[i].Accepted = Accepted{Message: snd.Message(snd.ID, last, timeUTC(snd.TS)), Recipients: mem}
		tg.apply(snd, timeUTC(snd.TS))
		p.fresh = append(p.fresh, i)
	}
}

// write sends the batch's writes in one pipelined round trip.
//
// The history rows and their outbox rows go in one statement
// (docs/architecture.md, invariant 1: an outbox row never exists without
// its history row; the database checks it when the statement ends),
// then the chats' last_seq is raised and the relays notified in a second,
// then the events' targets are updated (events.go). Arrays through unnest
// beat COPY and per-row statements here: one statement carries the whole
// batch, and unlike COPY it can skip a resend's row and feed the outbox
// insert. The rows' ids were drawn from their sequences in load, so the
// outbox rows need only the ids of the history rows the insert kept (a
// resend's is skipped, see CommitBatch), not a join by msg_id for each id,
// and the outbox ids need not come back (docs/benchmarks-log.md, "PostgreSQL's statements per batch, and a collation bug
// they showed (2026-12-03, 13:17–15:05 UTC)"). Outbox ids follow batch
// order (the drawn ids are sorted), so a chat's rows are relayed in seq
// order.
func (p *commitPlan) write(ctx context.Context, conn pipeline) error {
	b := &pgx.Batch{}
	p.queueInsert(b)
	targetUpdates, err := p.queueTargetUpdates(b)
	if err != nil {
		return err
	}
	br := conn.SendBatch(ctx, b)
	defer br.Close()
	if err := p.readInsert(br); err != nil {
		return err
	}
	for range targetUpdates {
		if _, err := br.Exec(); err != nil {
			return fmt.Errorf("update targets: %w", err)
		}
	}
	if err := br.Close(); err != nil {
		return fmt.Errorf("insert batch: %w", err)
	}
	return nil
}

func (p *commitPlan) queueInsert(b *pgx.Batch) {
	c := p.columns()
	b.Queue(`with h as (
			insert into history (id, msg_id, chat_id, seq, sender, device, cid, body, created_at, kind, target, meta, emoji, react_on)
			select u.id, u.msg_id, u.chat_id, u.seq, u.sender, u.device, u.cid, u.body, u.created_at, u.kind, u.target, u.meta::json, u.emoji, u.react_on
			from unnest($15::int8[], $1::text[], $2::text[], $3::int8[], $4::text[], $5::text[], $6::text[], $7::text[], $8::timestamptz[],
				$9::text[], $10::text[], $11::text[], $12::text[], $13::bool[])
				as u(id, msg_id, chat_id, seq, sender, device, cid, body, created_at, kind, target, meta, emoji, react_on)
			on conflict (sender, cid) do nothing
			returning id)
		insert into outbox (id, history_id, recipients)
		select u.id, u.history_id, string_to_array(u.r, ',')
		from unnest($16::int8[], $15::int8[], $14::text[]) as u(id, history_id, r)
		where u.history_id in (select id from h)`,
		c.msgIDs, c.chats, c.seqs, c.froms, c.devices, c.cids, c.bodies, c.tss,
		c.kinds, c.targets, c.metas, c.emojis, c.ons, c.recips, c.historyIDs, c.outboxIDs)
	b.Queue(`update chats set last_seq = u.seq
		from unnest($1::text[], $2::int8[]) as u(id, seq)
		where chats.id = u.id and chats.last_seq < u.seq`, c.upChats, c.upSeqs)
}

// readInsert reads the results of queueInsert's statements and gives every
// fresh send its outbox id.
func (p *commitPlan) readInsert(br pgx.BatchResults) error {
	tag, err := br.Exec()
	if err != nil {
		return fmt.Errorf("insert history and outbox: %w", err)
	}
	if n := tag.RowsAffected(); n < int64(len(p.fresh)) {
		// The history insert skipped a stored (sender, cid), and its
		// outbox row went with it (invariant 1).
		return fmt.Errorf("insert history and outbox: %d rows for %d messages: %w", n, len(p.fresh), errCIDStored)
	} else if n != int64(len(p.fresh)) {
		return fmt.Errorf("insert history and outbox: %d outbox rows for %d messages", n, len(p.fresh))
	}
	for k, i := range p.fresh {
		p.out[i].OutboxID = p.outboxIDs[k]
	}
	if _, err := br.Exec(); err != nil {
		return fmt.Errorf("advance chats: %w", err)
	}
	return nil
}

// insertColumns are the fresh rows as column arrays for unnest.
type insertColumns struct {
	msgIDs, chats, froms, devices, cids, bodies, recips textArray
	seqs                                                int8Array
	tss                                                 timestamptzArray
	upChats                                             textArray // chats and their new last_seq
	upSeqs                                              int8Array
	historyIDs, outboxIDs                               int8Array // the fresh rows' drawn ids, in batch order
	eventColumns
}

func (p *commitPlan) columns() insertColumns {
	n := len(p.fresh)
	c := insertColumns{
		msgIDs: make(textArray, n), chats: make(textArray, n), froms: make(textArray, n),
		devices: make(textArray, n), cids: make(textArray, n), bodies: make(textArray, n),
		recips: make(textArray, n), seqs: make(int8Array, n), tss: make(timestamptzArray, n),
		upChats: make(textArray, 0, len(p.lastSeq)), upSeqs: make(int8Array, 0, len(p.lastSeq)),
		historyIDs: p.historyIDs[:n], outboxIDs: p.outboxIDs[:n],
	}
	joined := make(map[string]string, len(p.chatIDs))
	for k, i := range p.fresh {
		m := &p.out[i].Message
		c.msgIDs[k], c.chats[k], c.froms[k], c.devices[k] = m.ID, m.Chat, m.From, m.Device
		c.cids[k], c.bodies[k], c.seqs[k], c.tss[k] = m.CID, m.Body, m.Seq, m.TS
		r, ok := joined[m.Chat]
		if !ok {
			// text[] per row cannot pass through unnest of a 2-D array, so
			// each row's recipients travel as one comma-joined text that
			// string_to_array splits (user ids are [A-Za-z0-9_-], no comma).
			// Measured here, that is cheaper per row than jsonb[] with
			// jsonb_array_elements_text, and needs no JSON in Go.
			r = strings.Join(p.out[i].Recipients, ",")
			joined[m.Chat] = r
		}
		c.recips[k] = r
	}
	for id, seq := range p.lastSeq {
		c.upChats, c.upSeqs = append(c.upChats, id), append(c.upSeqs, seq)
	}
	c.eventColumns = p.eventColumns()
	return c
}

// checkEnvelope refuses a send whose stream envelope would be over its
// limit. It sizes the envelope the relay will publish, with the largest
// outbox id (the send's own is drawn but not yet given out: which fresh
// index it gets is decided as assign goes) and the seq it would take.
func (p *commitPlan) checkEnvelope(snd *Send, seq int64, recipients []string) error {
	if snd.MaxEnvelopeBytes <= 0 {
		return nil
	}
	// A big group's member list is measured once per batch, not per send.
	toSize, ok := p.recipientsSize[snd.Chat]
	if !ok {
		if p.recipientsSize == nil {
			p.recipientsSize = make(map[string]int, len(p.chatIDs))
		}
		toSize = codec.JSONListSize(recipients)
		p.recipientsSize[snd.Chat] = toSize
	}
	e := chatd.Envelope{OutboxID: math.MaxInt64, Message: snd.Message(snd.ID, seq, timeUTC(snd.TS)), Device: snd.Device}
	if n := codec.EnvelopeSizeWithRecipients(&e, toSize); n > snd.MaxEnvelopeBytes {
		return fmt.Errorf("the message would be %d bytes on the delivery stream (its body escaped for JSON, %d recipients), over the limit of %d: "+
			"send a shorter body (control characters and < > & count 6 bytes each): %w",
			n, len(recipients), snd.MaxEnvelopeBytes, chatd.ErrTooLarge)
	}
	return nil
}

// cidConflict refuses a send whose (sender, cid) names a message of another
// chat. Answering it with that message would tell the sender that a message
// its chat's members never get was accepted.
func cidConflict(snd *Send) error {
	return fmt.Errorf("cid %q was already used by %s for another chat or kind of event: give each new message or event a new cid: %w",
		snd.CID, snd.From, chatd.ErrCIDConflict)
}

// resolveDuplicates answers the repeats inside the batch with the message of
// their first occurrence (always an accepted one), marked Duplicate.
func (p *commitPlan) resolveDuplicates() {
	for i, j := range p.dupOf {
		if j >= 0 {
			p.out[i].Accepted = Accepted{Message: p.out[j].Message, Duplicate: true}
		}
	}
}
