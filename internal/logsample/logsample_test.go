package logsample_test

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chatd/chatd/internal/logsample"
)

// fakeClock is a clock the test moves by hand.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func newSampler(t *testing.T) (*logsample.Sampler, *fakeClock, *bytes.Buffer) {
	t.Helper()
	var buf bytes.Buffer
	h := slog.NewTextHandler(&buf, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}})
	clk := &fakeClock{t: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)}
	s := logsample.New(slog.New(h), logsample.Config{Interval: 5 * time.Second, Now: clk.now})
	return s, clk, &buf
}

func lines(buf *bytes.Buffer) []string {
	out := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(out) == 1 && out[0] == "" {
		return nil
	}
	return out
}

// A burst of one message logs its first occurrence, then one summary per
// interval while it keeps repeating, then a final summary on Flush.
func TestSamplerLogsFirstThenCounts(t *testing.T) {
	s, clk, buf := newSampler(t)
	err := errors.New("nats: timeout")
	for i := 0; i < 400; i++ { // 400 failures in 1 s
		s.Warn("relay round failed", "err", err)
		clk.add(2500 * time.Microsecond)
	}
	if got := lines(buf); len(got) != 1 || !strings.Contains(got[0], `level=WARN msg="relay round failed" err="nats: timeout"`) {
		t.Fatalf("after a 1 s burst: got %q, want only the first occurrence", got)
	}
	clk.add(4 * time.Second) // the window is over
	s.Warn("relay round failed", "err", err)
	got := lines(buf)
	if len(got) != 2 || !strings.Contains(got[1], "repeated=399") || !strings.Contains(got[1], "window=5s") {
		t.Fatalf("after the window: got %q, want a second line with repeated=399 window=5s (400 calls, the first logged)", got)
	}
	// The line that carried the count opened a new window.
	s.Warn("relay round failed", "err", err)
	s.Warn("relay round failed", "err", err)
	s.Flush()
	got = lines(buf)
	if len(got) != 3 || !strings.Contains(got[2], "repeated=2") {
		t.Fatalf("after Flush: got %q, want a third line with repeated=2", got)
	}
	s.Flush() // nothing suppressed since: nothing to say
	if n := len(lines(buf)); n != 3 {
		t.Fatalf("a second Flush logged: %d lines, want 3", n)
	}
}

// Messages are sampled independently, and the level is kept.
func TestSamplerKeysByMessage(t *testing.T) {
	s, clk, buf := newSampler(t)
	s.Warn("a failed")
	s.Error("b failed")
	s.Warn("a failed")
	s.Error("b failed")
	s.Error("b failed")
	if got := lines(buf); len(got) != 2 {
		t.Fatalf("got %q, want one line per message", got)
	}
	clk.add(5 * time.Second)
	s.Flush()
	got := lines(buf)
	want := []string{`level=WARN msg="a failed" repeated=1 window=5s`, `level=ERROR msg="b failed" repeated=2 window=5s`}
	if len(got) != 4 || got[2] != want[0] || got[3] != want[1] {
		t.Fatalf("got %q, want the summaries %q in message order", got[2:], want)
	}
}

// After a quiet window a message is logged again at once, with no count.
func TestSamplerQuietWindowResets(t *testing.T) {
	s, clk, buf := newSampler(t)
	s.Warn("x")
	clk.add(6 * time.Second)
	s.Warn("x")
	got := lines(buf)
	if len(got) != 2 || strings.Contains(got[1], "repeated") {
		t.Fatalf("got %q, want two plain lines", got)
	}
}

// Sampling is safe for concurrent use.
func TestSamplerConcurrent(t *testing.T) {
	s, _, buf := newSampler(t)
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 100; j++ {
				s.Warn("same")
			}
		}()
	}
	wg.Wait()
	s.Flush()
	got := lines(buf)
	if len(got) != 2 || !strings.Contains(got[1], "repeated=799") {
		t.Fatalf("got %q, want the first line and repeated=799", got)
	}
}
