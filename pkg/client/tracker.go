package client

import (
	"sort"
	"sync"

	"github.com/chatd/chatd"
)

// entry is a message and how it arrived.
type entry struct {
	msg chatd.Message
	via Via
}

// tracker keeps, per chat, the highest contiguous seq handed out and the
// messages held behind a gap. It is the dedupe and ordering core: a message
// is ready exactly once, when every lower seq of its chat has been ready.
// Because seq is gapless and identifies a message inside its chat, chat+seq
// is the dedupe key (protocol.md duty 2). Safe for concurrent use; callers
// that hand ready messages on must serialise add+hand-off themselves to keep
// the order (Client.deliver does).
type tracker struct {
	maxHeld int

	mu    sync.Mutex
	chats map[string]*chatState
}

type chatState struct {
	contig int64 // every seq in 1..contig has been handed out
	held   map[int64]entry
}

func newTracker(maxHeld int) *tracker {
	return &tracker{maxHeld: maxHeld, chats: make(map[string]*chatState)}
}

// track starts tracking chat with every seq up to after treated as handed
// out. It reports false, changing nothing, when chat is already tracked.
func (t *tracker) track(chat string, after int64) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.chats[chat]; ok {
		return false
	}
	t.chats[chat] = &chatState{contig: max(after, 0), held: make(map[int64]entry)}
	return true
}

// untrack forgets chat: it is no longer synced and its held frames are dropped.
func (t *tracker) untrack(chat string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.chats, chat)
}

// add offers one message. It appends the messages now ready, in seq order,
// to ready and returns it (possibly with none added: m is held behind a gap
// or was dropped because the held buffer is full), and whether m was a
// duplicate. A chat not tracked yet is tracked from seq 0. Passing a reused
// ready keeps the in-order delivery, the common case, free of allocations.
func (t *tracker) add(ready []entry, m chatd.Message, via Via) (_ []entry, dup bool) {
	if m.Seq <= 0 {
		return ready, false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	cs, ok := t.chats[m.Chat]
	if !ok {
		cs = &chatState{held: make(map[int64]entry)}
		t.chats[m.Chat] = cs
	}
	if m.Seq <= cs.contig {
		return ready, true
	}
	if _, ok := cs.held[m.Seq]; ok {
		return ready, true
	}
	if m.Seq == cs.contig+1 {
		ready = append(ready, entry{m, via})
		cs.contig++
		return cs.releaseLocked(ready), false
	}
	cs.held[m.Seq] = entry{m, via}
	if len(cs.held) > t.maxHeld {
		cs.dropNewestLocked()
	}
	return ready, false
}

// skipTo declares every seq up to seq of chat gone from history (purged past
// retention): held frames up to it are released in order, and the resume
// point moves to seq. It returns what became ready.
func (t *tracker) skipTo(chat string, seq int64) []entry {
	t.mu.Lock()
	defer t.mu.Unlock()
	cs, ok := t.chats[chat]
	if !ok {
		return nil
	}
	return cs.skipToLocked(seq)
}

func (cs *chatState) skipToLocked(seq int64) []entry {
	if seq <= cs.contig {
		return nil
	}
	var ready []entry
	below := make([]int64, 0)
	for s := range cs.held {
		if s <= seq {
			below = append(below, s)
		}
	}
	sort.Slice(below, func(i, j int) bool { return below[i] < below[j] })
	for _, s := range below {
		ready = append(ready, cs.held[s])
		delete(cs.held, s)
	}
	cs.contig = seq
	return cs.releaseLocked(ready)
}

// releaseLocked appends the held run that now follows contig.
func (cs *chatState) releaseLocked(ready []entry) []entry {
	for {
		e, ok := cs.held[cs.contig+1]
		if !ok {
			return ready
		}
		delete(cs.held, cs.contig+1)
		cs.contig++
		ready = append(ready, e)
	}
}

func (cs *chatState) dropNewestLocked() {
	var top int64
	for s := range cs.held {
		top = max(top, s)
	}
	delete(cs.held, top)
}

// contiguous returns the highest contiguous seq handed out for chat (its
// resume point) and whether chat is tracked.
func (t *tracker) contiguous(chat string) (int64, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	cs, ok := t.chats[chat]
	if !ok {
		return 0, false
	}
	return cs.contig, true
}

// hasGap reports whether chat has frames held behind a gap.
func (t *tracker) hasGap(chat string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	cs, ok := t.chats[chat]
	return ok && len(cs.held) > 0
}

// held returns the number of frames held behind gaps over all chats.
func (t *tracker) heldCount() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, cs := range t.chats {
		n += len(cs.held)
	}
	return n
}

// list returns the tracked chats.
func (t *tracker) list() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]string, 0, len(t.chats))
	for c := range t.chats {
		out = append(out, c)
	}
	sort.Strings(out)
	return out
}
