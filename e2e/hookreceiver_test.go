package e2e_test

import (
	"bufio"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chatd/chatd/pkg/client"
	"github.com/chatd/chatd/pkg/webhook"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// hookCopy is one request the receiver accepted: the event it carried and
// the id it was sent under.
type hookCopy struct {
	webhookID, eventID, chat string
	seq                      int64
	// node is the chatd that posted it, when the receiver's nodeOf says.
	node string
	// aside: a chat.notify, chat.member or chat.read, counted apart and
	// not in copies.
	aside bool
	// change is a chat.member's or chat.read's data.id (0 otherwise).
	change int64
}

// hookReceiver is a webhook endpoint that checks every request as the
// Standard Webhooks specification says, without chatd's code, and answers
// each one slowly, so that a chatd killed mid-delivery has posts in flight.
type hookReceiver struct {
	key []byte
	// lib is the specification's published Go library, set up and called
	// as docs/integrations.md tells receivers to: it must take every
	// request the receiver's own check takes.
	lib   *standardwebhooks.Webhook
	delay time.Duration
	// nodeOf, if set, names the chatd that sent a request.
	nodeOf func(*http.Request) string

	mu       sync.Mutex
	copies   []hookCopy
	inFlight int
	asides   int        // chat.notify, chat.member and chat.read requests accepted
	changes  []hookCopy // chat.member and chat.read requests accepted, in arrival order
	bad      []string   // requests that failed verification, and why
}

// newHookReceiver is a receiver that waits delay before each answer, with
// a fresh signing key; secret is that key as chatd's --webhook-secret.
func newHookReceiver(t *testing.T, delay time.Duration) (recv *hookReceiver, secret string) {
	t.Helper()
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		t.Fatal(err)
	}
	secret = "whsec_" + base64.StdEncoding.EncodeToString(key)
	lib, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	return &hookReceiver{key: key, lib: lib, delay: delay}, secret
}

func (r *hookReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	if err != nil {
		return // chatd hung up (killed) mid-request
	}
	c, why := r.verify(req.Header, body)
	if r.nodeOf != nil {
		c.node = r.nodeOf(req)
	}
	r.mu.Lock()
	if why != "" {
		r.bad = append(r.bad, why)
		r.mu.Unlock()
		http.Error(w, why, http.StatusUnauthorized)
		return
	}
	if c.aside {
		r.asides++
		if c.change != 0 {
			r.changes = append(r.changes, c)
		}
	} else {
		r.copies = append(r.copies, c)
	}
	r.inFlight++
	r.mu.Unlock()
	time.Sleep(r.delay)
	r.mu.Lock()
	r.inFlight--
	r.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

// verify checks the signature (HMAC-SHA256 over "id.timestamp.body" keyed
// by the decoded secret, any of the space-separated v1 signatures), the
// timestamp (within 5 minutes) and the payload, and returns the copy or
// why it is refused.
func (r *hookReceiver) verify(h http.Header, body []byte) (hookCopy, string) {
	id, ts, sigs := h.Get("webhook-id"), h.Get("webhook-timestamp"), h.Get("webhook-signature")
	if id == "" || ts == "" || sigs == "" {
		return hookCopy{}, fmt.Sprintf("missing header: id %q, timestamp %q, signature %q", id, ts, sigs)
	}
	unix, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return hookCopy{}, fmt.Sprintf("webhook-timestamp %q: %v", ts, err)
	}
	if d := time.Since(time.Unix(unix, 0)); d > 5*time.Minute || d < -5*time.Minute {
		return hookCopy{}, fmt.Sprintf("webhook-timestamp %d is %v from now", unix, d)
	}
	m := hmac.New(sha256.New, r.key)
	m.Write([]byte(id + "." + ts + "."))
	m.Write(body)
	want := m.Sum(nil)
	signed := false
	for _, s := range strings.Fields(sigs) {
		v, b64, ok := strings.Cut(s, ",")
		got, err := base64.StdEncoding.DecodeString(b64)
		if ok && v == "v1" && err == nil && hmac.Equal(got, want) {
			signed = true
		}
	}
	if !signed {
		return hookCopy{}, fmt.Sprintf("webhook %s: no v1 signature matches (%q)", id, sigs)
	}
	if err := r.lib.Verify(body, h); err != nil {
		return hookCopy{}, fmt.Sprintf("webhook %s: the Standard Webhooks library refuses it: %v", id, err)
	}
	var p struct {
		Type string `json:"type"`
		Data struct {
			ID     json.RawMessage `json:"id"` // a number in a change, a string in a notification
			ChatID string          `json:"chat_id"`
			Seq    int64           `json:"seq"`
			Event  struct {
				ID   string `json:"id"`
				Chat string `json:"chat"`
				Seq  int64  `json:"seq"`
			} `json:"event"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &p); err != nil {
		return hookCopy{}, fmt.Sprintf("webhook %s: payload: %v", id, err)
	}
	d := p.Data
	if p.Type == "chat.notify" && d.ChatID != "" {
		// An offline notification (the tests' recipients are offline):
		// signed like the rest, not a message of the chat's log.
		return hookCopy{webhookID: id, aside: true}, ""
	}
	if p.Type == "chat.member" || p.Type == "chat.read" {
		// A chat change: in its chat's order by data.id, not of the log.
		n, err := strconv.ParseInt(string(d.ID), 10, 64)
		if err != nil || n <= 0 || d.ChatID == "" {
			return hookCopy{}, fmt.Sprintf("webhook %s: a %s without chat_id or a numeric id: %s", id, p.Type, body)
		}
		return hookCopy{webhookID: id, aside: true, chat: d.ChatID, change: n}, ""
	}
	if p.Type != "chat.message" || d.ChatID != d.Event.Chat || d.Seq != d.Event.Seq || d.Event.ID == "" {
		return hookCopy{}, fmt.Sprintf("webhook %s: inconsistent payload %s", id, body)
	}
	return hookCopy{webhookID: id, eventID: d.Event.ID, chat: d.ChatID, seq: d.Seq}, ""
}

// changesSeen returns the chat changes received so far, in arrival order.
func (r *hookReceiver) changesSeen() []hookCopy {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]hookCopy(nil), r.changes...)
}

// checkChanges checks the chat changes a receiver got: every one of want
// (by data.id) arrived, first copies in each chat's id order, and a repeat
// came under the webhook-id of its first copy. It returns the repeats.
func checkChanges(t *testing.T, got []hookCopy, want int) int {
	t.Helper()
	firstID := map[int64]string{}
	last := map[string]int64{}
	dups := 0
	for _, c := range got {
		if id, ok := firstID[c.change]; ok {
			dups++
			if id != c.webhookID {
				t.Errorf("change %d came again under webhook-id %s, first %s", c.change, c.webhookID, id)
			}
			continue
		}
		firstID[c.change] = c.webhookID
		if c.change <= last[c.chat] {
			t.Errorf("chat %s: change %d first arrived after %d", c.chat, c.change, last[c.chat])
		}
		last[c.chat] = c.change
	}
	if len(firstID) != want {
		t.Errorf("%d distinct changes arrived, want %d", len(firstID), want)
	}
	return dups
}

// snapshot returns the copies received so far and how many are being
// answered.
func (r *hookReceiver) snapshot() ([]hookCopy, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]hookCopy(nil), r.copies...), r.inFlight
}

// distinct counts the events received at least once; a refused request
// fails t at once, so that a bad signature is not reported as a timeout.
func (r *hookReceiver) distinct(t *testing.T) int {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.bad) > 0 {
		t.Fatalf("%d requests failed verification, the first: %s", len(r.bad), r.bad[0])
	}
	seen := map[string]bool{}
	for _, c := range r.copies {
		seen[c.eventID] = true
	}
	return len(seen)
}

// hookMetric is the named webhook metric of the endpoint at url on chatd's
// /metrics (its own series: the endpoint's offline notifications have
// another, under the consumer name and -notify); 0 if it cannot be read.
func hookMetric(addr, name, url string) float64 {
	return metricValue(addr, name+`{endpoint="`+webhook.ConsumerName(url)+`"}`)
}

// metricValue adds up every series of the named metric on chatd's
// /metrics; 0 if it cannot be read.
func metricValue(addr, name string) float64 {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	var sum float64
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, name); ok && (strings.HasPrefix(rest, " ") || strings.HasPrefix(rest, "{")) {
			f := strings.Fields(line)
			v, err := strconv.ParseFloat(f[len(f)-1], 64)
			if err == nil {
				sum += v
			}
		}
	}
	return sum
}

// checkHookCopies checks the copies a receiver accepted, in their order,
// against the accepted sends by message id: each copy is of an accepted
// message, under webhook-id msg_<id>_…, and a webhook-id carries one event;
// first copies come in each chat's seq order; a repeat carries its first
// copy's webhook-id; every accepted message arrived. It returns the
// webhook-id of each event's first copy and the number of repeats.
func checkHookCopies(t *testing.T, copies []hookCopy, accepted map[string]client.Accepted) (firstID map[string]string, dups int) {
	t.Helper()
	firstID = map[string]string{}  // event id → webhook-id of its first copy
	eventOf := map[string]string{} // webhook-id → event id
	lastSeq := map[string]int64{}  // chat → seq of the latest first copy
	for i, c := range copies {
		a, ok := accepted[c.eventID]
		if !ok {
			t.Fatalf("copy %d: event %s (chat %s, seq %d) was never accepted", i, c.eventID, c.chat, c.seq)
		}
		if a.Seq != c.seq {
			t.Fatalf("copy %d: event %s has seq %d, accepted with %d", i, c.eventID, c.seq, a.Seq)
		}
		if !strings.HasPrefix(c.webhookID, "msg_"+c.eventID+"_") {
			t.Fatalf("copy %d: webhook-id %s is not msg_<event id>_… for event %s (docs/integrations.md)", i, c.webhookID, c.eventID)
		}
		if ev, ok := eventOf[c.webhookID]; ok && ev != c.eventID {
			t.Fatalf("webhook-id %s carried events %s and %s", c.webhookID, ev, c.eventID)
		}
		eventOf[c.webhookID] = c.eventID
		if first, ok := firstID[c.eventID]; ok {
			dups++
			if first != c.webhookID {
				t.Fatalf("event %s arrived as %s and again as %s", c.eventID, first, c.webhookID)
			}
			continue
		}
		firstID[c.eventID] = c.webhookID
		if c.seq <= lastSeq[c.chat] {
			t.Fatalf("chat %s: seq %d first arrived after seq %d", c.chat, c.seq, lastSeq[c.chat])
		}
		lastSeq[c.chat] = c.seq
	}
	for id, a := range accepted {
		if _, ok := firstID[id]; !ok {
			t.Fatalf("accepted message %s (seq %d) never reached the endpoint", id, a.Seq)
		}
	}
	return firstID, dups
}
