package api_test

import (
	"sync"
	"testing"
	"time"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/pkg/api"
)

// heldIngest delays every answer of a real Ingester until release: the one
// fault a credits test needs (sends that stay unanswered).
type heldIngest struct {
	api.Ingester
	mu   sync.Mutex
	held []func()
}

func (h *heldIngest) Submit(req chatd.SendRequest, done func(chatd.SendResult)) error {
	return h.Ingester.Submit(req, func(r chatd.SendResult) {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.held = append(h.held, func() { done(r) })
	})
}

func (h *heldIngest) release() int {
	h.mu.Lock()
	held := h.held
	h.held = nil
	h.mu.Unlock()
	for _, f := range held {
		f()
	}
	return len(held)
}

// releaseN releases answers until n were released (they arrive after commit).
func (h *heldIngest) releaseN(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for n > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d answers never came", n)
		}
		n -= h.release()
		time.Sleep(time.Millisecond)
	}
}

func TestWSCreditsBoundUnansweredSends(t *testing.T) {
	var held *heldIngest
	e := mustEnv(t, func(c *api.Config) {
		held = &heldIngest{Ingester: c.Ingest}
		c.Ingest = held
		c.Limits.Credits = 2
	})
	chat := e.mustGroup(t, "alice")
	c, _ := e.dial(t, "alice", "")
	c.sendJSON(sendFrame(chat, "k1", "x"))
	c.sendJSON(sendFrame(chat, "k2", "x"))
	c.sendJSON(sendFrame(chat, "k3", "x"))
	if r := c.nextOf("rejected"); r["code"] != "rate_limited" || r["cid"] != "k3" {
		t.Fatalf("third send with 2 credits: %v, want rejected rate_limited k3", r)
	}
	// Answers return the credits once the two sends committed.
	held.releaseN(t, 2)
	got := map[any]bool{c.nextOf("accepted")["cid"]: true, c.nextOf("accepted")["cid"]: true}
	if !got["k1"] || !got["k2"] {
		t.Fatalf("accepted %v, want k1 and k2", got)
	}
	c.sendJSON(sendFrame(chat, "k3", "x"))
	held.releaseN(t, 1)
	if a := c.nextOf("accepted"); a["cid"] != "k3" {
		t.Errorf("resend after credits returned: %v", a)
	}
}
