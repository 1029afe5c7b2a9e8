package main

// Bad clients: a share of --clients that never sends a valid
// message, to show that one client's bad input or flood never hurts another
// client. Poison clients send bodies with NUL, bodies over the server's
// limit and frames that are not the protocol at all; typing flooders send
// typing frames for their own chat, for the good clients' chats and for
// chats that do not exist. They speak raw WebSocket rather than the SDK,
// which cannot write a broken frame, and they are not in the plan: the
// reconciliation and the latencies are the good clients' alone. A server
// that closes a bad connection (4400, 4008) is doing its job, so a close is
// counted, never a failure, and the bad client dials again after a pause.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/chatd/chatd/pkg/client"
	"github.com/fasthttp/websocket"
)

// Roles of a bad client.
const (
	rolePoison uint8 = iota
	roleFlood
)

// badClient is one bad user with a connection at a time.
type badClient struct {
	idx   int
	role  uint8
	user  string
	token string
	ws    string // the node it dials
	chat  string // its own direct chat, with a user who never connects
}

// badFleet owns the bad clients; run drives them until its context ends.
type badFleet struct {
	cfg     *Config
	runID   string
	clients []*badClient
	others  []string // the good clients' chats: a flooder is in none of them
	stats   *badStats
}

// newBadFleet creates the bad users' tokens and own chats; nil when the
// run has none.
func newBadFleet(ctx context.Context, cfg *Config, p *plan, t *target, runID string, hc *http.Client) (*badFleet, error) {
	n := cfg.poisonClients + cfg.floodClients
	if n == 0 {
		return nil, nil
	}
	b := &badFleet{cfg: cfg, runID: runID, stats: newBadStats()}
	for _, ch := range p.chats {
		b.others = append(b.others, ch.id)
	}
	for i := range n {
		role := rolePoison
		if i >= cfg.poisonClients {
			role = roleFlood
		}
		bc, err := b.newClient(ctx, i, role, t, hc)
		if err != nil {
			return nil, err
		}
		b.clients = append(b.clients, bc)
	}
	return b, nil
}

func (b *badFleet) newClient(ctx context.Context, i int, role uint8, t *target, hc *http.Client) (*badClient, error) {
	user := "B" + b.runID + "-" + strconv.Itoa(i)
	tok, err := t.token(user)
	if err != nil {
		return nil, fmt.Errorf("token for %s: %w", user, err)
	}
	ws, err := wsURL(t.clientURL(i))
	if err != nil {
		return nil, err
	}
	// The chat is made over REST through the SDK, which is never run: the
	// bad client's frames go over its own connection.
	rc, err := client.New(client.Config{URL: t.clientURL(i), Token: tok, HTTPClient: hc, Logger: b.cfg.Logger})
	if err != nil {
		return nil, fmt.Errorf("client %s: %w", user, err)
	}
	defer rc.Close()
	// Its partner never connects: a poison message that got stored would
	// reach nobody's screen, and the good clients' deliveries stay exact.
	ch, err := rc.Direct(ctx, user+"-sink")
	if err != nil {
		return nil, fmt.Errorf("create %s's chat: %w", user, err)
	}
	return &badClient{idx: i, role: role, user: user, token: tok, ws: ws, chat: ch.ID}, nil
}

// wsURL is the WebSocket endpoint of a node's base URL, as the SDK derives it.
func wsURL(base string) (string, error) {
	u, err := url.Parse(base)
	if err != nil {
		return "", fmt.Errorf("node url: %w", err)
	}
	switch u.Scheme {
	case "http":
		u.Scheme = "ws"
	case "https":
		u.Scheme = "wss"
	default:
		return "", fmt.Errorf("node url %q: want http or https", base)
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + "/ws"
	return u.String(), nil
}

// run keeps every bad client connected and sending until ctx ends, and
// returns once each has closed its connection.
func (b *badFleet) run(ctx context.Context) {
	var wg sync.WaitGroup
	for _, bc := range b.clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b.keep(ctx, bc)
		}()
	}
	wg.Wait()
}

// Reconnect pauses of a bad client: badBackoffMin after any session, doubling
// while dials fail, up to badBackoffMax. The pause keeps a client that is
// closed at once from dialling in a hot loop.
const (
	badBackoffMin = 100 * time.Millisecond
	badBackoffMax = 5 * time.Second
)

// keep runs sessions of bc back to back, with a pause between them.
func (b *badFleet) keep(ctx context.Context, bc *badClient) {
	fails := 0
	for n := 0; ctx.Err() == nil; n++ {
		if b.session(ctx, bc, n) {
			fails = 0
		} else {
			fails++
		}
		d := min(badBackoffMin<<min(fails, 6), badBackoffMax)
		t := time.NewTimer(jitter(d))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// badFrame is what a bad client reads of the server's frames.
type badFrame struct {
	Type   string `json:"type"`
	CID    string `json:"cid"`
	Code   string `json:"code"`
	Limits struct {
		MaxBodyBytes int `json:"max_body_bytes"`
	} `json:"limits"`
}

// session runs one connection of bc, the n-th, until the server closes it
// or ctx ends, and reports whether it got as far as hello.
func (b *badFleet) session(ctx context.Context, bc *badClient, n int) bool {
	d := websocket.Dialer{HandshakeTimeout: 5 * time.Second}
	conn, resp, err := d.DialContext(ctx, bc.ws, http.Header{"Authorization": {"Bearer " + bc.token}})
	if resp != nil && resp.Body != nil {
		resp.Body.Close()
	}
	if err != nil {
		if ctx.Err() == nil {
			b.stats.dialFailures.Add(1)
		}
		return false
	}
	defer conn.Close()
	conn.SetReadLimit(1 << 20)
	var hello badFrame
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, data, err := conn.ReadMessage()
	if err != nil || json.Unmarshal(data, &hello) != nil || hello.Type != "hello" {
		if ctx.Err() == nil {
			b.stats.dialFailures.Add(1)
		}
		return false
	}
	conn.SetReadDeadline(time.Time{})
	b.stats.connects.Add(1)

	readerDone := make(chan struct{})
	var code int
	go func() {
		defer close(readerDone)
		code = b.read(conn, bc)
	}()
	w := &badWriter{conn: conn, done: readerDone, maxBody: hello.Limits.MaxBodyBytes}
	if bc.role == rolePoison {
		b.poison(ctx, w, bc, n)
	} else {
		b.flood(ctx, w, bc, n)
	}
	if ctx.Err() != nil {
		// Our own end of the session is not the server's verdict.
		conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
		conn.Close()
		<-readerDone
		return true
	}
	// A write failed or the reader saw the close: give the reader a moment
	// to take the server's close frame, which says why.
	select {
	case <-readerDone:
	case <-time.After(time.Second):
	}
	conn.Close()
	<-readerDone
	b.stats.closed(code)
	return true
}

// read counts the server's answers to bc until the connection ends, and
// returns its close code (0: no close frame).
func (b *badFleet) read(conn *websocket.Conn, bc *badClient) int {
	for {
		_, data, err := conn.ReadMessage()
		if err != nil {
			var ce *websocket.CloseError
			if errors.As(err, &ce) {
				return ce.Code
			}
			return 0
		}
		var f badFrame
		if json.Unmarshal(data, &f) != nil {
			continue
		}
		b.stats.answer(bc.role, f)
	}
}

// badWriter writes a bad client's frames; one goroutine at a time.
type badWriter struct {
	conn    *websocket.Conn
	done    <-chan struct{} // closed when the reader has ended
	maxBody int             // hello's max_body_bytes
}

// write sends one frame and reports whether the session goes on. The
// deadline bounds a write to a server that stopped reading.
func (w *badWriter) write(msgType int, data []byte) bool {
	select {
	case <-w.done:
		return false
	default:
	}
	w.conn.SetWriteDeadline(time.Now().Add(2 * time.Second))
	return w.conn.WriteMessage(msgType, data) == nil
}

// poison sends poison frames at PoisonRate until ctx ends or the session does.
func (b *badFleet) poison(ctx context.Context, w *badWriter, bc *badClient, session int) {
	t := time.NewTicker(time.Duration(float64(time.Second) / b.cfg.PoisonRate))
	defer t.Stop()
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			return
		case <-w.done:
			return
		case <-t.C:
		}
		kind := b.cfg.poisonMix.pick(rand.Float64())
		cid := b.runID + "-" + poisonName(kind) + "-" + strconv.Itoa(bc.idx) + "-" + strconv.Itoa(session) + "-" + strconv.Itoa(i)
		msgType, data := poisonFrame(kind, i, bc.chat, cid, w.maxBody)
		if !w.write(msgType, data) {
			return
		}
		b.stats.poisonSent[kind].Add(1)
	}
}

// flood sends typing frames, paced at TypingFloodRate or else as fast as
// the connection takes them, until ctx ends or the session does.
func (b *badFleet) flood(ctx context.Context, w *badWriter, bc *badClient, session int) {
	var tick <-chan time.Time
	if r := b.cfg.TypingFloodRate; r > 0 {
		t := time.NewTicker(time.Duration(float64(time.Second) / r))
		defer t.Stop()
		tick = t.C
	}
	for i := 0; ctx.Err() == nil; i++ {
		if tick != nil {
			select {
			case <-ctx.Done():
				return
			case <-tick:
			}
		}
		chat := floodChat(i, bc, b.others, b.runID+"-x"+strconv.Itoa(session))
		if !w.write(websocket.TextMessage, typingFrame(chat)) {
			return
		}
		b.stats.typingSent.Add(1)
	}
}

// floodChat is the chat of a flooder's i-th typing frame: in turn its own
// chat, a good client's chat it is not in, and a chat id never seen, fresh
// each time, so that no per-chat limit or member cache absorbs the flood.
func floodChat(i int, bc *badClient, others []string, fresh string) string {
	switch i % 3 {
	case 0:
		return bc.chat
	case 1:
		if len(others) > 0 {
			return others[(i/3+bc.idx)%len(others)]
		}
	}
	return fresh + "-" + strconv.Itoa(bc.idx) + "-" + strconv.Itoa(i)
}

func typingFrame(chat string) []byte {
	b, _ := json.Marshal(struct {
		Type string `json:"type"`
		Chat string `json:"chat"`
	}{"typing", chat})
	return b
}
