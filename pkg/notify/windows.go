package notify

import (
	"time"

	"github.com/chatd/chatd"
)

// held is a delivery-stream message the notifier has taken: acked once
// every window it is in has been decided. It keeps only what deciding and
// a notification need, not the delivery: thousands are held for seconds,
// and a delivery keeps its data and parsed headers alive, which the
// collector marks at every cycle.
type held struct {
	// reply is the newest delivery's ack subject (empty in tests).
	reply string
	// m has only ID, Chat, From, Seq, TS and, when the preview shows
	// text, Body already cut to the preview.
	m    chatd.Message
	seq  uint64 // in the delivery stream
	refs int
	// since is about when its ack wait began (heldack.Since).
	since time.Time
}

type key struct{ user, chat string }

// window is one member's messages of one chat accepted within After of the
// first: decided together, at most one notification, once the newest of
// them is After old, so each message has its whole After to be acked.
type window struct {
	key
	end    time.Time // the first message's time + After: later messages open the next window
	decide time.Time // the newest message's time + After
	items  []*held
}

// windows is the notifier's state: the open window per member and chat,
// and those closed and waiting to be decided. One goroutine owns it.
type windows struct {
	after  time.Duration
	open   map[key]*window
	closed []*window
}

func newWindows(after time.Duration) *windows {
	return &windows{after: after, open: map[key]*window{}}
}

// add puts a message into the window of each recipient but its sender,
// opening windows as needed; a message accepted at or after a window's end
// closes it (to be decided when due) and opens the next. It reports whether any window took the
// message (if none did, nobody is to be notified of it).
func (ws *windows) add(h *held, recipients []string) bool {
	for _, user := range recipients {
		if user == h.m.From {
			continue
		}
		k := key{user, h.m.Chat}
		w := ws.open[k]
		if w != nil && !h.m.TS.Before(w.end) {
			ws.closed = append(ws.closed, w)
			w = nil
		}
		if w == nil {
			w = &window{key: k, end: h.m.TS.Add(ws.after)}
			ws.open[k] = w
		}
		w.items = append(w.items, h)
		if d := h.m.TS.Add(ws.after); d.After(w.decide) {
			w.decide = d
		}
		h.refs++
	}
	return h.refs > 0
}

// due takes the windows to decide at now, closed or open: those whose
// newest message is After old. A closed window waits too: the message
// that closed it may come before the acks of its last messages were
// recorded.
func (ws *windows) due(now time.Time) []*window {
	var out, keep []*window
	for _, w := range ws.closed {
		if now.Before(w.decide) {
			keep = append(keep, w)
		} else {
			out = append(out, w)
		}
	}
	ws.closed = keep
	for k, w := range ws.open {
		if !now.Before(w.decide) {
			out = append(out, w)
			delete(ws.open, k)
		}
	}
	return out
}

// requeue puts windows that could not be decided back (their end has
// passed), to be tried first next time.
func (ws *windows) requeue(w []*window) {
	ws.closed = append(w, ws.closed...)
}

// done releases a decided window's messages: it returns those no other
// window holds any more, to be acked.
func (w *window) done() []*held {
	var free []*held
	for _, h := range w.items {
		if h.refs--; h.refs == 0 {
			free = append(free, h)
		}
	}
	return free
}

// behind is the window's messages after seq reached (what the member got
// live or read): those to notify of, and the newest of them.
func (w *window) behind(reached int64) (n int, newest *held) {
	for _, h := range w.items {
		if h.m.Seq > reached {
			n++
			if newest == nil || h.m.Seq > newest.m.Seq {
				newest = h
			}
		}
	}
	return n, newest
}
