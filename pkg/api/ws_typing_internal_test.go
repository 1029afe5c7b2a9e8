package api

import (
	"strconv"
	"testing"
	"time"
)

// The limiter passes one typing frame per chat per 3 s and keeps chats
// apart; it is a pure function of the clock, so time moves by hand.
func TestTypingLimiter(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	steps := []struct {
		name string
		chat string
		at   time.Duration
		want bool
	}{
		{"first passes", "c1", 0, true},
		{"again at once is dropped", "c1", 0, false},
		{"another chat passes", "c2", 100 * time.Millisecond, true},
		{"just under 3 s is dropped", "c1", typingInterval - time.Millisecond, false},
		{"at 3 s passes", "c1", typingInterval, true},
		{"a drop does not restart the interval", "c1", typingInterval + typingInterval - time.Millisecond, false},
		{"after the interval passes", "c1", 2 * typingInterval, true},
	}
	var l typingLimiter
	for _, tt := range steps {
		if got := l.allow(tt.chat, t0.Add(tt.at)) == typingPass; got != tt.want {
			t.Errorf("%s: got %v, want %v", tt.name, got, tt.want)
		}
	}
}

// Pruning forgets only expired chats, so a connection typing in many chats
// keeps a small map and still limits the recent ones.
func TestTypingLimiterPrunes(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	var l typingLimiter
	for i := range typingMaxChats {
		l.allow(string(rune('a'+i)), t0)
	}
	l.allow("recent", t0.Add(typingInterval))
	if l.allow("late", t0.Add(typingInterval+time.Second)) != typingPass {
		t.Fatal("a new chat was dropped")
	}
	if got := len(l.last); got > 3 {
		t.Errorf("got %d chats kept, want the expired ones pruned", got)
	}
	if l.allow("recent", t0.Add(typingInterval+time.Second)) != typingRecent {
		t.Error("pruning forgot a chat still inside its interval")
	}
}

// However many chats a connection types in at once, the limiter keeps a
// bounded map: a flood of new chat ids must not grow it, and the frames
// over the bound are refused (they count toward the abuse rule).
func TestTypingLimiterBounded(t *testing.T) {
	const chats, bound = 1000, typingMaxChats
	t0 := time.Unix(1_700_000_000, 0)
	var l typingLimiter
	refused := 0
	for i := range chats {
		if l.allow("c"+strconv.Itoa(i), t0) == typingFull {
			refused++
		}
	}
	if got := len(l.last); got > bound {
		t.Errorf("typing in %d chats at once: got %d chats kept, want at most %d", chats, got, bound)
	}
	if want := chats - bound; refused != want {
		t.Errorf("typing in %d chats at once: %d frames refused, want %d", chats, refused, want)
	}
	if l.allow("new", t0.Add(typingInterval)) != typingPass {
		t.Error("a new chat after the interval was refused")
	}
}

// A message sent to a chat ends its interval: typing right after a send
// passes at once (the receivers cleared the indicator when the message
// came), while other chats keep theirs.
func TestTypingLimiterAfterSend(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	var l typingLimiter
	l.allow("c1", t0)
	l.allow("c2", t0)
	l.sent("c1")
	if l.allow("c1", t0.Add(100*time.Millisecond)) != typingPass {
		t.Error("typing right after a send was dropped")
	}
	if l.allow("c2", t0.Add(100*time.Millisecond)) == typingPass {
		t.Error("a send to c1 ended c2's interval")
	}
	if l.allow("c1", t0.Add(200*time.Millisecond)) == typingPass {
		t.Error("the interval did not restart after the send")
	}
}
