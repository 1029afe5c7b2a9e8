package notify

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/chatd/chatd"
)

func msgAt(seq int64, from string, at time.Time) *held {
	return &held{m: chatd.Message{ID: "m" + string(rune('0'+seq)), Chat: "c", Seq: seq, From: from, TS: at}}
}

func TestWindowsCollapseAndClose(t *testing.T) {
	t0 := time.Unix(1000, 0)
	ws := newWindows(time.Second)
	m1, m2, m3 := msgAt(1, "alice", t0), msgAt(2, "alice", t0.Add(500*time.Millisecond)), msgAt(3, "alice", t0.Add(time.Second))
	for _, h := range []*held{m1, m2, m3} {
		if !ws.add(h, []string{"alice", "bob"}) {
			t.Fatalf("message %d taken by no window", h.m.Seq)
		}
	}
	if m1.refs != 1 {
		t.Fatalf("the sender got a window: refs %d", m1.refs)
	}
	// m3 came at the first window's end: it closed it and opened the next.
	// The first is decided once m2, its newest, is a second old.
	if d := ws.due(t0.Add(1499 * time.Millisecond)); len(d) != 0 {
		t.Fatalf("the first window was decided before its newest message was a second old")
	}
	due := ws.due(t0.Add(1500 * time.Millisecond))
	if len(due) != 1 || len(due[0].items) != 2 {
		t.Fatalf("due when its newest message is a second old: %d windows, want 1 of 2 messages", len(due))
	}
	if n, newest := due[0].behind(1); n != 1 || newest != m2 {
		t.Fatalf("behind seq 1: %d, newest %v; want 1, message 2", n, newest)
	}
	if n, _ := due[0].behind(2); n != 0 {
		t.Fatalf("behind seq 2: %d, want 0", n)
	}
	if free := due[0].done(); len(free) != 2 {
		t.Fatalf("done freed %d messages, want 2", len(free))
	}
	if d := ws.due(t0.Add(1999 * time.Millisecond)); len(d) != 0 {
		t.Fatalf("the second window was due before its end")
	}
	d := ws.due(t0.Add(2 * time.Second))
	if len(d) != 1 || d[0].items[0] != m3 {
		t.Fatalf("second window: %v", d)
	}
	// A window that could not be decided comes back first.
	ws.requeue(d)
	if again := ws.due(t0.Add(2 * time.Second)); len(again) != 1 || again[0] != d[0] {
		t.Fatalf("requeued window not due again")
	}
}

func TestWindowsShareAMessage(t *testing.T) {
	t0 := time.Unix(1000, 0)
	ws := newWindows(time.Second)
	m := msgAt(1, "alice", t0)
	if !ws.add(m, []string{"alice", "bob", "carol"}) || m.refs != 2 {
		t.Fatalf("refs %d, want 2 (bob, carol)", m.refs)
	}
	due := ws.due(t0.Add(time.Second))
	if free := due[0].done(); len(free) != 0 {
		t.Fatalf("freed while another window holds it")
	}
	if free := due[1].done(); len(free) != 1 {
		t.Fatalf("not freed once both windows were decided")
	}
	if ws.add(msgAt(2, "alice", t0), []string{"alice"}) {
		t.Fatalf("a message only to its sender was taken")
	}
}

func TestPreviewCutsAtRunes(t *testing.T) {
	if got := preview("short"); got != "short" {
		t.Fatalf("preview(short) = %q", got)
	}
	long := strings.Repeat("é", PreviewRunes+10)
	got := preview(long)
	if utf8.RuneCountInString(got) != PreviewRunes || !strings.HasSuffix(got, "…") || !utf8.ValidString(got) {
		t.Fatalf("preview of %d runes: %d runes %q", PreviewRunes+10, utf8.RuneCountInString(got), got)
	}
	exact := strings.Repeat("a", PreviewRunes)
	if preview(exact) != exact {
		t.Fatalf("a body of exactly PreviewRunes was cut")
	}
}

// The notifier decides windows whose end is a recorder's flush and a
// margin past: a window closed early, by a message at its end that the
// notifier took at once, waits for that too, or the acks of its last
// messages would not be in PostgreSQL yet.
func TestAClosedWindowWaitsForItsEnd(t *testing.T) {
	t0 := time.Unix(1000, 0)
	ws := newWindows(time.Second)
	ws.add(msgAt(1, "alice", t0), []string{"alice", "bob"})
	ws.add(msgAt(2, "alice", t0.Add(time.Second)), []string{"alice", "bob"})
	if d := ws.due(t0.Add(999 * time.Millisecond)); len(d) != 0 {
		t.Fatalf("a window closed by the next message was due %v before its end", time.Millisecond)
	}
	if d := ws.due(t0.Add(time.Second)); len(d) != 1 || d[0].items[0].m.Seq != 1 {
		t.Fatalf("at its end: %d windows due, want the first", len(d))
	}
}
