// Command webhook-receiver is a small chatd webhook endpoint that verifies
// every request as the Standard Webhooks specification says, with the
// standard library only, and prints the events it accepts, skipping
// duplicates by webhook-id (docs/integrations.md).
//
//	CHATD_WEBHOOK_SECRET=whsec_… webhook-receiver -listen 127.0.0.1:9000
//	chatd --webhook http://127.0.0.1:9000/
package main

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// tolerance is how far a request's timestamp may be from this clock; older
// requests are refused, so a captured one cannot be replayed later.
const tolerance = 5 * time.Minute

// maxBody bounds a request body; chatd's events are far smaller.
const maxBody = 1 << 20

// Verifier checks Standard Webhooks signatures with one secret.
type Verifier struct {
	key []byte
	now func() time.Time
}

// NewVerifier takes the secret as chatd's --webhook-secret: whsec_ and the
// base64 of the key.
func NewVerifier(secret string) (*Verifier, error) {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil || len(key) == 0 {
		return nil, errors.New("the secret must be whsec_ followed by base64, as given to chatd")
	}
	return &Verifier{key: key, now: time.Now}, nil
}

// Verify checks the headers of a request whose raw body is body.
func (v *Verifier) Verify(h http.Header, body []byte) error {
	id, ts, sigs := h.Get("webhook-id"), h.Get("webhook-timestamp"), h.Get("webhook-signature")
	if id == "" || ts == "" || sigs == "" {
		return errors.New("missing webhook-id, webhook-timestamp or webhook-signature")
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return errors.New("webhook-timestamp is not Unix seconds")
	}
	if d := v.now().Sub(time.Unix(sec, 0)); d > tolerance || d < -tolerance {
		return fmt.Errorf("webhook-timestamp is %v away from this clock", d.Round(time.Second))
	}
	m := hmac.New(sha256.New, v.key)
	fmt.Fprintf(m, "%s.%s.", id, ts)
	m.Write(body)
	want := []byte(base64.StdEncoding.EncodeToString(m.Sum(nil)))
	// The header may list several space-separated signatures (a sender
	// rotating its secret); one matching v1 is enough.
	for _, s := range strings.Fields(sigs) {
		if b64, ok := strings.CutPrefix(s, "v1,"); ok && hmac.Equal([]byte(b64), want) {
			return nil
		}
	}
	return errors.New("no signature matches")
}

// Event is the part of chatd's payload this receiver prints: a chat event,
// with type chat.notify an offline notification, or with type chat.member
// or chat.read a change of the chat's members or of a member's read
// position (docs/integrations.md).
type Event struct {
	Type string `json:"type"`
	Data struct {
		ChatID string `json:"chat_id"`
		Seq    int64  `json:"seq"`
		Event  struct {
			ID   string `json:"id"`
			From string `json:"from"`
			Body string `json:"body"`
		} `json:"event"`
		// chat.notify only.
		User        string `json:"user"`
		Sender      string `json:"sender"`
		Text        string `json:"text"`
		Count       int    `json:"count"`
		UnreadTotal int64  `json:"unread_total"`
		// chat.member and chat.read only.
		Change string   `json:"change"`
		Users  []string `json:"users"`
		By     string   `json:"by"`
		Upto   string   `json:"upto"`
	} `json:"data"`
}

// String is how the receiver prints e; a notification is where an app
// server would send a push to the user's devices (title, body, badge).
func (e Event) String() string {
	d := e.Data
	switch e.Type {
	case "chat.notify":
		return fmt.Sprintf("push to %s: title=%q body=%q badge=%d collapse=%s (%d new)", d.User, d.Sender, d.Text, d.UnreadTotal, d.ChatID, d.Count)
	case "chat.member":
		return fmt.Sprintf("chat %s: %s %s by %q", d.ChatID, d.Change, strings.Join(d.Users, ","), d.By)
	case "chat.read":
		return fmt.Sprintf("chat %s: %s read up to seq %d (%s)", d.ChatID, strings.Join(d.Users, ","), d.Seq, d.Upto)
	}
	return fmt.Sprintf("%s chat=%s seq=%d from=%s: %s", e.Type, d.ChatID, d.Seq, d.Event.From, d.Event.Body)
}

// Handler verifies, dedupes and hands each new event to Handle.
type Handler struct {
	Verifier *Verifier
	Handle   func(id string, e Event)

	mu   sync.Mutex
	seen map[string]bool // webhook-ids handled; a real receiver keeps them with a TTL
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
	if err != nil {
		http.Error(w, "read body", http.StatusBadRequest)
		return
	}
	if err := h.Verifier.Verify(r.Header, body); err != nil {
		http.Error(w, err.Error(), http.StatusUnauthorized)
		return
	}
	var e Event
	if err := json.Unmarshal(body, &e); err != nil {
		http.Error(w, "not a chatd event", http.StatusBadRequest)
		return
	}
	id := r.Header.Get("webhook-id")
	h.mu.Lock()
	dup := h.seen[id]
	if h.seen == nil {
		h.seen = map[string]bool{}
	}
	h.seen[id] = true
	h.mu.Unlock()
	if !dup {
		h.Handle(id, e)
	}
	w.WriteHeader(http.StatusNoContent)
}

func main() {
	listen := flag.String("listen", "127.0.0.1:9000", "address to serve on")
	flag.Parse()
	v, err := NewVerifier(os.Getenv("CHATD_WEBHOOK_SECRET"))
	if err != nil {
		log.Fatal(err)
	}
	h := &Handler{Verifier: v, Handle: func(id string, e Event) { fmt.Println(e) }}
	srv := &http.Server{Addr: *listen, Handler: h, ReadHeaderTimeout: 10 * time.Second}
	log.Printf("listening on %s", *listen)
	log.Fatal(srv.ListenAndServe())
}
