package main

import (
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/pkg/client"
)

// Send outcomes.
const (
	sendPending uint8 = iota
	sendAccepted
	sendRejected
	sendUnknown // the send's context ended before an answer
)

// Kinds of a send (the event it submits), for per-kind counts.
const (
	kindMessage uint8 = iota
	kindEdit
	kindDelete
	kindReaction
	numKinds
)

// kindName names kind k in reports.
func kindName(k uint8) string {
	switch k {
	case kindMessage:
		return "message"
	case kindEdit:
		return "edit"
	case kindDelete:
		return "delete"
	case kindReaction:
		return "reaction"
	}
	return "unknown"
}

// sendRec is one send: what the sender asked, and what chatd answered.
// Times are nanoseconds since the recorder's start.
type sendRec struct {
	sentAt     int64
	acceptedAt int64
	seq        int64
	id         string
	chat       int32
	state      uint8
	kind       uint8
}

// senderLog is one client's sends, indexed by the number in their cid.
type senderLog struct {
	mu   sync.Mutex
	recs []sendRec
}

// recorder keeps every send and, per recipient, every (chat, seq) handed to
// the application, so that reconciliation can check each accepted message
// at each of its recipients. Safe for concurrent use.
type recorder struct {
	plan      *plan
	runID     string
	cidPrefix string // runID + "_", which starts every cid of this run
	start     time.Time
	senders   []senderLog
	inboxes   []inbox

	// measureFrom is the warm-up's end (ns since start): only sends from
	// then on feed the latency histograms and the achieved rate.
	measureFrom atomic.Int64

	sent, accepted, acceptedMeasured, unknown atomic.Int64
	expected, received, live, history         atomic.Int64
	dupApp, foreign, mismatch                 atomic.Int64
	// acceptedKind counts accepted sends by kind, acceptedKindMeasured
	// those of the measured window.
	acceptedKind, acceptedKindMeasured [numKinds]atomic.Int64

	rejectMu sync.Mutex
	rejects  map[string]int64

	acceptLat, deliverLat histogram // the measured window
	acceptIv, deliverIv   histogram // since the last sample
	// handLat and handIv time every first hand-out, live or from history:
	// what the application waited. During a failover the stalled messages
	// often arrive by a gap fetch from history, so the live-only figures
	// would leave out exactly the slow ones.
	handLat, handIv histogram
	// faulty marks the clients that stall or drop (set before the load);
	// steadyLat times live deliveries to the others alone, so a fault
	// injected into some clients does not hide what the rest saw.
	faulty    []bool
	steadyLat histogram
}

func newRecorder(p *plan, runID string, start time.Time) *recorder {
	return &recorder{
		plan:      p,
		runID:     runID,
		cidPrefix: runID + "_",
		start:     start,
		senders:   make([]senderLog, len(p.users)),
		inboxes:   make([]inbox, len(p.users)),
		rejects:   make(map[string]int64),
	}
}

func (r *recorder) since(t time.Time) int64 { return int64(t.Sub(r.start)) }

// begin records a send about to be made and returns its cid, which names
// the sender and the record so any recipient can find it.
func (r *recorder) begin(sender int, chat int32) (n int, cid string) {
	return r.beginKind(sender, chat, kindMessage)
}

// beginKind is begin for an event of the given kind.
func (r *recorder) beginKind(sender int, chat int32, kind uint8) (n int, cid string) {
	now := r.since(time.Now())
	l := &r.senders[sender]
	l.mu.Lock()
	n = len(l.recs)
	l.recs = append(l.recs, sendRec{sentAt: now, chat: chat, kind: kind})
	l.mu.Unlock()
	r.sent.Add(1)
	return n, r.cid(sender, n)
}

// cid is the cid of send n of sender, built with a single allocation.
func (r *recorder) cid(sender, n int) string {
	var b [64]byte
	buf := append(b[:0], r.cidPrefix...)
	buf = strconv.AppendInt(buf, int64(sender), 10)
	buf = append(buf, '_')
	buf = strconv.AppendInt(buf, int64(n), 10)
	return string(buf)
}

// finish records the answer to send n of sender.
func (r *recorder) finish(sender, n int, acc client.Accepted, err error) {
	now := r.since(time.Now())
	l := &r.senders[sender]
	l.mu.Lock()
	rec := &l.recs[n]
	switch {
	case err == nil:
		rec.state, rec.acceptedAt, rec.seq, rec.id = sendAccepted, now, acc.Seq, acc.ID
	case isRejected(err):
		rec.state = sendRejected
	default:
		rec.state = sendUnknown
	}
	sentAt, chat, state, kind := rec.sentAt, rec.chat, rec.state, rec.kind
	l.mu.Unlock()

	switch state {
	case sendAccepted:
		r.accepted.Add(1)
		r.acceptedKind[kind].Add(1)
		r.expected.Add(int64(r.plan.recipients(chat)))
		if sentAt >= r.measureFrom.Load() {
			r.acceptedMeasured.Add(1)
			r.acceptedKindMeasured[kind].Add(1)
			d := time.Duration(now - sentAt)
			r.acceptLat.record(d)
			r.acceptIv.record(d)
		}
	case sendRejected:
		var rej *client.RejectedError
		errors.As(err, &rej)
		r.rejectMu.Lock()
		r.rejects[string(rej.Code)]++
		r.rejectMu.Unlock()
	default:
		r.unknown.Add(1)
	}
}

func isRejected(err error) bool {
	var rej *client.RejectedError
	return errors.As(err, &rej)
}

// deliver records message m handed to recipient's application.
func (r *recorder) deliver(recipient int, m chatd.Message, via client.Via, at time.Time) {
	if via == client.ViaSelf {
		return // the sender's own copy is not a delivery
	}
	chat, ok := r.plan.chatIdx[m.Chat]
	sender, n, okCID := r.parseCID(m.CID)
	if !ok || !okCID || sender == recipient {
		r.foreign.Add(1)
		return
	}
	if !r.inboxes[recipient].mark(chat, m.Seq) {
		r.dupApp.Add(1)
		return
	}
	r.received.Add(1)
	if via == client.ViaHistory {
		r.history.Add(1)
	} else {
		r.live.Add(1)
	}
	l := &r.senders[sender]
	l.mu.Lock()
	if n >= len(l.recs) {
		l.mu.Unlock()
		r.foreign.Add(1)
		return
	}
	rec := l.recs[n]
	l.mu.Unlock()
	if rec.state == sendAccepted && (rec.seq != m.Seq || rec.id != m.ID || rec.chat != chat) {
		r.mismatch.Add(1)
	}
	if rec.sentAt < r.measureFrom.Load() {
		return
	}
	d := time.Duration(r.since(at) - rec.sentAt)
	r.handLat.record(d)
	r.handIv.record(d)
	if via == client.ViaLive {
		r.deliverLat.record(d)
		r.deliverIv.record(d)
		if recipient < len(r.faulty) && !r.faulty[recipient] {
			r.steadyLat.record(d)
		}
	}
}

// parseCID reads "<run>_<sender>_<n>" (cids allow only [A-Za-z0-9_-]); other cids are not this run's.
func (r *recorder) parseCID(cid string) (sender, n int, ok bool) {
	rest, ok := strings.CutPrefix(cid, r.cidPrefix)
	if !ok {
		return 0, 0, false
	}
	a, b, ok := strings.Cut(rest, "_")
	if !ok {
		return 0, 0, false
	}
	s, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	if err1 != nil || err2 != nil || s < 0 || s >= len(r.senders) || n < 0 {
		return 0, 0, false
	}
	return s, n, true
}

func (r *recorder) rejectCounts() map[string]int64 {
	r.rejectMu.Lock()
	defer r.rejectMu.Unlock()
	out := make(map[string]int64, len(r.rejects))
	for k, v := range r.rejects {
		out[k] = v
	}
	return out
}

// inbox is what one recipient's application was handed: per chat, a
// bitset of seqs. Seqs are gapless per chat, so the set stays dense.
type inbox struct {
	mu    sync.Mutex
	chats map[int32][]uint64
}

// mark sets (chat, seq) and reports whether it was new.
func (b *inbox) mark(chat int32, seq int64) bool {
	if seq <= 0 {
		return false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.chats == nil {
		b.chats = make(map[int32][]uint64)
	}
	bits := b.chats[chat]
	w := int(seq / 64)
	if w >= len(bits) {
		bits = append(bits, make([]uint64, w+1-len(bits))...)
		b.chats[chat] = bits
	}
	mask := uint64(1) << (seq % 64)
	if bits[w]&mask != 0 {
		return false
	}
	bits[w] |= mask
	return true
}

func (b *inbox) has(chat int32, seq int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	bits := b.chats[chat]
	w := int(seq / 64)
	return seq > 0 && w < len(bits) && bits[w]&(uint64(1)<<(seq%64)) != 0
}
