package main

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
)

// Down modes of a receiver's outage.
const (
	downRefuse = "refuse" // the listener closes: connections are refused
	down503    = "503"    // requests are answered 503 Service Unavailable
)

// hookSpec is one --webhook-receiver: where it listens and the faults it
// injects. Its text form is ADDR[,fail-pct=N][,down-at=D,down-for=D][,down=refuse|503].
type hookSpec struct {
	Addr string
	// FailPct of the requests (outside an outage) are answered 500.
	FailPct float64
	// DownAt, after the load starts (warm-up included), the receiver goes
	// down for DownFor, the way Down says. DownFor zero: never down.
	DownAt, DownFor time.Duration
	Down            string
}

func parseHookSpec(s string) (hookSpec, error) {
	parts := strings.Split(s, ",")
	sp := hookSpec{Addr: strings.TrimSpace(parts[0]), Down: downRefuse}
	if _, _, err := net.SplitHostPort(sp.Addr); err != nil {
		return sp, fmt.Errorf("webhook receiver %q: want HOST:PORT first (e.g. 127.0.0.1:9101): %w", s, err)
	}
	for _, p := range parts[1:] {
		k, v, ok := strings.Cut(strings.TrimSpace(p), "=")
		if !ok {
			return sp, fmt.Errorf("webhook receiver %q: %q is not key=value", s, p)
		}
		var err error
		switch k {
		case "fail-pct":
			sp.FailPct, err = strconv.ParseFloat(v, 64)
			if err == nil && (sp.FailPct < 0 || sp.FailPct > 100) {
				err = errors.New("want a percentage (0–100)")
			}
		case "down-at":
			sp.DownAt, err = time.ParseDuration(v)
		case "down-for":
			sp.DownFor, err = time.ParseDuration(v)
		case "down":
			if v != downRefuse && v != down503 {
				err = fmt.Errorf("want %s or %s", downRefuse, down503)
			}
			sp.Down = v
		default:
			err = errors.New("unknown key: want fail-pct, down-at, down-for or down")
		}
		if err != nil {
			return sp, fmt.Errorf("webhook receiver %q: %s: %w", s, k, err)
		}
	}
	if sp.DownAt < 0 || sp.DownFor < 0 {
		return sp, fmt.Errorf("webhook receiver %q: down-at and down-for must be ≥ 0", s)
	}
	return sp, nil
}

func (sp hookSpec) String() string {
	s := sp.Addr
	if sp.FailPct > 0 {
		s += fmt.Sprintf(" fail %g%%", sp.FailPct)
	}
	if sp.DownFor > 0 {
		s += fmt.Sprintf(" down (%s) %v from +%v", sp.Down, sp.DownFor, sp.DownAt)
	}
	return s
}

// hookCopy is one request a receiver accepted (answered 2xx).
type hookCopy struct {
	webhookID string
	kind      string // the payload's type
	chat      string
	seq       int64
	eventID   string
	body      [sha256.Size]byte // the body's hash: duplicates must repeat it
	at        time.Time
}

// Payload types that are signed and retried like the chat's events but are
// not of its seq log, so only counted: an offline notification, a member
// change, a read position.
const (
	notifyType = "chat.notify"
	memberType = "chat.member"
	readType   = "chat.read"
)

// evKey names an event by chat and seq, as accepted sends are recorded.
type evKey struct {
	chat string
	seq  int64
}

// signatureTolerance is how far webhook-timestamp may be from the
// receiver's clock: the Standard Webhooks libraries' default.
const signatureTolerance = 5 * time.Minute

// hookReceiver is an HTTP endpoint that checks every request as the
// Standard Webhooks specification says, injects its spec's faults and
// records what it accepted. Safe for concurrent use.
type hookReceiver struct {
	spec hookSpec
	key  []byte
	now  func() time.Time

	wg    sync.WaitGroup // the serving and fault goroutines
	conns atomic.Int64   // connections accepted

	mu      sync.Mutex
	srv     *fasthttp.Server // nil while refusing
	down    bool
	downAt  time.Time // the outage's actual start and end
	upAt    time.Time
	copies  []hookCopy
	first   map[evKey]int // event → index of its first copy
	counts  hookCounts
	badWhys []string // the first few refused requests, and why
}

// hookCounts are a receiver's request counts.
type hookCounts struct {
	SignatureFailures int64 `json:"signature_failures"`
	BadPayloads       int64 `json:"bad_payloads"`
	Injected          int64 `json:"injected_failures"` // answered 500 by fail-pct
	DownAnswers       int64 `json:"down_answers"`      // answered 503 in an outage
	Notifies          int64 `json:"notify_events"`     // chat.notify accepted, not reconciled
	Changes           int64 `json:"change_events"`     // chat.member and chat.read accepted, not reconciled
	// Connections is how many TCP connections the sender opened: about one
	// per request when its client keeps too few idle connections.
	Connections int64 `json:"connections"`
}

func newHookReceiver(sp hookSpec, key []byte) *hookReceiver {
	return &hookReceiver{spec: sp, key: key, now: time.Now, first: map[evKey]int{}}
}

// start listens on the spec's address and serves until stop.
func (r *hookReceiver) start() error {
	ln, err := net.Listen("tcp", r.spec.Addr)
	if err != nil {
		return fmt.Errorf("webhook receiver: %w (pick a free port)", err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.serveLocked(ln)
	return nil
}

// serveLocked serves ln with fasthttp, whose server costs the receivers,
// on the cores chatd runs on, less CPU per request than net/http's. Idle
// connections stay open (as net/http's would) so that the sender's kept
// connections are what is measured.
func (r *hookReceiver) serveLocked(ln net.Listener) {
	srv := &fasthttp.Server{Handler: r.serve, ReadTimeout: 10 * time.Second, IdleTimeout: time.Hour,
		MaxRequestBodySize: maxHookBody, ConnState: r.connState}
	r.srv = srv
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		srv.Serve(ln) //nolint:errcheck // ends when the listener closes, on stop or an outage
	}()
}

// startFaults runs the spec's outage, measured from loadStart, until ctx
// ends; stop waits for it.
func (r *hookReceiver) startFaults(ctx context.Context, loadStart time.Time) {
	if r.spec.DownFor <= 0 {
		return
	}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		if !sleepUntil(ctx, loadStart.Add(r.spec.DownAt)) {
			return
		}
		r.goDown()
		sleepUntil(ctx, loadStart.Add(r.spec.DownAt+r.spec.DownFor))
		r.comeBack(ctx)
	}()
}

func (r *hookReceiver) goDown() {
	r.mu.Lock()
	r.down, r.downAt = true, r.now()
	var srv *fasthttp.Server
	if r.spec.Down == downRefuse {
		srv, r.srv = r.srv, nil
	}
	r.mu.Unlock()
	r.closeServer(srv)
}

// closeServer closes srv's listener and connections, once the requests
// being answered are; called without mu, which those handlers may wait for.
func (r *hookReceiver) closeServer(srv *fasthttp.Server) {
	if srv != nil {
		srv.Shutdown() //nolint:errcheck // the listener and every connection go
	}
}

// comeBack ends the outage; a refusing receiver listens again on its
// address, retrying while the port is not yet free.
func (r *hookReceiver) comeBack(ctx context.Context) {
	for r.spec.Down == downRefuse {
		ln, err := net.Listen("tcp", r.spec.Addr)
		if err == nil {
			r.mu.Lock()
			r.serveLocked(ln)
			r.mu.Unlock()
			break
		}
		if !sleepUntil(ctx, time.Now().Add(100*time.Millisecond)) {
			return
		}
	}
	r.mu.Lock()
	r.down, r.upAt = false, r.now()
	r.mu.Unlock()
}

func (r *hookReceiver) connState(_ net.Conn, st fasthttp.ConnState) {
	if st == fasthttp.StateNew {
		r.conns.Add(1)
	}
}

// stop closes the server and waits for the receiver's goroutines; the
// caller ends the context given to startFaults first.
func (r *hookReceiver) stop() {
	r.mu.Lock()
	srv := r.srv
	r.srv = nil
	r.mu.Unlock()
	r.closeServer(srv)
	r.wg.Wait()
}

func sleepUntil(ctx context.Context, t time.Time) bool {
	tm := time.NewTimer(time.Until(t))
	defer tm.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-tm.C:
		return true
	}
}

// maxHookBody bounds a request's body; a larger one is answered 413.
const maxHookBody = 1 << 20

func (r *hookReceiver) serve(ctx *fasthttp.RequestCtx) {
	body := ctx.PostBody()
	r.mu.Lock()
	down := r.down && r.spec.Down == down503
	if down {
		r.counts.DownAnswers++
	}
	r.mu.Unlock()
	if down {
		ctx.Error("down (chatload --webhook-receiver)", fasthttp.StatusServiceUnavailable)
		return
	}
	h := &ctx.Request.Header
	c, why := verifyHook(r.key, string(h.Peek("webhook-id")), string(h.Peek("webhook-timestamp")),
		string(h.Peek("webhook-signature")), body, r.now())
	if why == "" {
		c, why = decodeHook(c, body)
	}
	if why != "" {
		r.refuse(ctx, why, c.webhookID == "")
		return
	}
	if r.spec.FailPct > 0 && rand.Float64()*100 < r.spec.FailPct {
		r.mu.Lock()
		r.counts.Injected++
		r.mu.Unlock()
		ctx.Error("injected failure (chatload --webhook-receiver fail-pct)", fasthttp.StatusInternalServerError)
		return
	}
	if c.kind == notifyType || c.kind == memberType || c.kind == readType {
		r.mu.Lock()
		if c.kind == notifyType {
			r.counts.Notifies++
		} else {
			r.counts.Changes++
		}
		r.mu.Unlock()
		ctx.SetStatusCode(fasthttp.StatusNoContent)
		return
	}
	// Recorded before the answer: the sender posts a chat's next event
	// only after this one's 2xx, so the record order is the chat's order.
	r.mu.Lock()
	c.at = r.now()
	if _, ok := r.first[evKey{c.chat, c.seq}]; !ok {
		r.first[evKey{c.chat, c.seq}] = len(r.copies)
	}
	r.copies = append(r.copies, c)
	r.mu.Unlock()
	ctx.SetStatusCode(fasthttp.StatusNoContent)
}

// refuse answers a request that failed verification (sig: its signature
// or headers; else its payload) 401 or 400 and keeps the reason.
func (r *hookReceiver) refuse(ctx *fasthttp.RequestCtx, why string, sig bool) {
	r.mu.Lock()
	if sig {
		r.counts.SignatureFailures++
	} else {
		r.counts.BadPayloads++
	}
	if len(r.badWhys) < 5 {
		r.badWhys = append(r.badWhys, why)
	}
	r.mu.Unlock()
	code := fasthttp.StatusBadRequest
	if sig {
		code = fasthttp.StatusUnauthorized
	}
	ctx.Error(why, code)
}

// verifyHook checks a request's headers as the Standard Webhooks
// specification says: webhook-timestamp within signatureTolerance of now,
// and one of the space-separated v1 signatures equal (in constant time) to
// the base64 of HMAC-SHA256(key, "id.timestamp.body"). id, ts and sigs are
// the webhook-id, webhook-timestamp and webhook-signature headers. It
// returns the copy with its webhook-id and body hash, or why it is refused
// (with an empty webhook-id).
func verifyHook(key []byte, id, ts, sigs string, body []byte, now time.Time) (hookCopy, string) {
	if id == "" || ts == "" || sigs == "" {
		return hookCopy{}, fmt.Sprintf("missing header: webhook-id %q, webhook-timestamp %q, webhook-signature %q", id, ts, sigs)
	}
	unix, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return hookCopy{}, fmt.Sprintf("webhook %s: webhook-timestamp %q is not Unix seconds", id, ts)
	}
	if d := now.Sub(time.Unix(unix, 0)); d > signatureTolerance || d < -signatureTolerance {
		return hookCopy{}, fmt.Sprintf("webhook %s: webhook-timestamp %d is %v from now (tolerance %v)", id, unix, d.Round(time.Second), signatureTolerance)
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte(id + "." + ts + "."))
	m.Write(body)
	want := m.Sum(nil)
	for _, s := range strings.Fields(sigs) {
		v, b64, ok := strings.Cut(s, ",")
		got, err := base64.StdEncoding.DecodeString(b64)
		if ok && v == "v1" && err == nil && hmac.Equal(got, want) {
			return hookCopy{webhookID: id, body: sha256.Sum256(body)}, ""
		}
	}
	return hookCopy{}, fmt.Sprintf("webhook %s: no v1 signature matches", id)
}

// decodeHook fills c from the payload (docs/integrations.md, "Payload"),
// or says why it is not a consistent chat event.
func decodeHook(c hookCopy, body []byte) (hookCopy, string) {
	var p struct {
		Type string `json:"type"`
		Data struct {
			ChatID string `json:"chat_id"`
			Seq    int64  `json:"seq"`
			Event  struct {
				ID   string `json:"id"`
				Chat string `json:"chat"`
				Seq  int64  `json:"seq"`
			} `json:"event"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &p); err != nil {
		return c, fmt.Sprintf("webhook %s: payload: %v", c.webhookID, err)
	}
	d := p.Data
	if p.Type == notifyType || p.Type == memberType || p.Type == readType {
		if d.ChatID == "" {
			return c, fmt.Sprintf("webhook %s: a %s without data.chat_id", c.webhookID, p.Type)
		}
		c.kind, c.chat = p.Type, d.ChatID
		return c, ""
	}
	if !strings.HasPrefix(p.Type, "chat.") || d.ChatID == "" || d.ChatID != d.Event.Chat || d.Seq <= 0 || d.Seq != d.Event.Seq || d.Event.ID == "" {
		return c, fmt.Sprintf("webhook %s: inconsistent payload (type %q, chat %q/%q, seq %d/%d, id %q)",
			c.webhookID, p.Type, d.ChatID, d.Event.Chat, d.Seq, d.Event.Seq, d.Event.ID)
	}
	c.kind, c.chat, c.seq, c.eventID = p.Type, d.ChatID, d.Seq, d.Event.ID
	return c, ""
}

// has counts the events of want the receiver has accepted at least once.
func (r *hookReceiver) has(want []expectedEvent) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, e := range want {
		if _, ok := r.first[evKey{e.chat, e.seq}]; ok {
			n++
		}
	}
	return n
}

// snapshot returns the copies accepted so far, the counts, the reasons of
// the first refusals and the outage's times.
func (r *hookReceiver) snapshot() (copies []hookCopy, counts hookCounts, whys []string, downAt, upAt time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	counts = r.counts
	counts.Connections = r.conns.Load()
	return append([]hookCopy(nil), r.copies...), counts, append([]string(nil), r.badWhys...), r.downAt, r.upAt
}
