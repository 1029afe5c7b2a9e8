package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/internal/testpg"
	"github.com/chatd/chatd/pkg/api"
	"github.com/chatd/chatd/pkg/api/apitest"
	"github.com/chatd/chatd/pkg/ingest"
	"github.com/chatd/chatd/pkg/push"
	"github.com/chatd/chatd/pkg/store"
	"github.com/fasthttp/websocket"
)

// The real components satisfy the API's consumer-owned interfaces.
var (
	_ api.Chats     = (*store.Store)(nil)
	_ api.Ingester  = (*ingest.Ingest)(nil)
	_ api.Deliverer = (*push.Registry)(nil)
)

// env is a running API over a real PostgreSQL store, a real ingest and a
// real push registry (live delivery through the fast path; the JetStream
// consumer belongs to the delivery tests).
type env struct {
	srv   *api.Server
	store *store.Store
	base  string // http://host:port
	ws    string // ws://host:port/ws
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// mustEnv starts an env; opts adjust the api.Config before New.
func mustEnv(t *testing.T, opts ...func(*api.Config)) *env {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, testpg.NewDatabase(t), store.Config{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	reg, err := push.New(push.Config{NodeID: "test", Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	in, err := ingest.New(ingest.Config{Store: st, Logger: quietLogger(), OnCommit: func(batch []store.Accepted) {
		for i := range batch {
			reg.FastPath(&batch[i].Message, batch[i].Recipients)
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	mustRun(t, in.Run)
	cfg := api.Config{
		JWTSecret: testSecret, Chats: st, Ingest: in, Delivery: reg, Ready: st.Ready, Logger: quietLogger(),
		// What the node announces: push's limits.
		Limits: api.Limits{Lease: push.DefaultLease, MaxAttempts: push.DefaultMaxAttempts, MaxPending: push.DefaultMaxPending},
	}
	for _, o := range opts {
		o(&cfg)
	}
	srv, err := api.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	mustRun(t, func(ctx context.Context) error { return srv.Serve(ctx, ln) })
	addr := ln.Addr().String()
	return &env{srv: srv, store: st, base: "http://" + addr, ws: "ws://" + addr + "/ws"}
}

// mustRun runs fn until the test ends, then cancels it and waits for it.
func mustRun(t *testing.T, fn func(context.Context) error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- fn(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("run: %v", err)
		}
	})
}

// call makes a REST call as user ("" sends no token) and returns the status
// and the decoded JSON body (nil when empty).
func (e *env) call(t *testing.T, user, method, path string, body any) (int, map[string]any, http.Header) {
	t.Helper()
	tok := ""
	if user != "" {
		tok = apitest.Token(t, testSecret, user, "")
	}
	return e.callToken(t, tok, method, path, body)
}

func (e *env) callToken(t *testing.T, tok, method, path string, body any) (int, map[string]any, http.Header) {
	t.Helper()
	var reqBody []byte
	switch b := body.(type) {
	case nil:
	case string:
		reqBody = []byte(b)
	default:
		var err error
		if reqBody, err = json.Marshal(b); err != nil {
			t.Fatal(err)
		}
	}
	req, err := http.NewRequest(method, e.base+path, bytes.NewReader(reqBody))
	if err != nil {
		t.Fatal(err)
	}
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, raw := e.do(t, req, reqBody)
	var out map[string]any
	if len(raw) > 0 && strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		if err := json.Unmarshal(raw, &out); err != nil {
			t.Fatalf("%s %s: body %q: %v", method, path, raw, err)
		}
	}
	return resp.StatusCode, out, resp.Header
}

// do sends req (whose body is reqBody) and returns the answer with its
// body read. Every exchange is checked against the OpenAPI document
// (checkOpenAPI): an answer it does not describe fails the test.
func (e *env) do(t *testing.T, req *http.Request, reqBody []byte) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	checkOpenAPI(t, req, reqBody, resp, raw)
	return resp, raw
}

// mustCall is call that fails the test unless the status is want.
func (e *env) mustCall(t *testing.T, want int, user, method, path string, body any) map[string]any {
	t.Helper()
	got, out, _ := e.call(t, user, method, path, body)
	if got != want {
		t.Fatalf("%s %s as %q: status %d (%v), want %d", method, path, user, got, out, want)
	}
	return out
}

// wantError checks a REST error answer.
func (e *env) wantError(t *testing.T, status int, code, user, method, path string, body any) {
	t.Helper()
	out := e.mustCall(t, status, user, method, path, body)
	if out["code"] != code || out["error"] == "" || out["error"] == nil {
		t.Errorf("%s %s: body %v, want code %q and an error text", method, path, out, code)
	}
}

func (e *env) mustGroup(t *testing.T, creator string, members ...string) string {
	t.Helper()
	out := e.mustCall(t, 201, creator, "POST", "/api/chats", map[string]any{"members": members, "title": "t"})
	return out["id"].(string)
}

// wsc is a test WebSocket client.
type wsc struct {
	t    *testing.T
	conn *websocket.Conn
}

// dial connects user/device and returns the client with its hello read.
func (e *env) dial(t *testing.T, user, device string) (*wsc, map[string]any) {
	t.Helper()
	url := e.ws + "?token=" + apitest.Token(t, testSecret, user, device)
	conn, resp, err := websocket.DefaultDialer.Dial(url, nil)
	checkUpgrade(t, url, nil, resp)
	if err != nil {
		status := 0
		if resp != nil {
			status = resp.StatusCode
		}
		t.Fatalf("dial %s/%s: %v (status %d)", user, device, err, status)
	}
	c := &wsc{t: t, conn: conn}
	t.Cleanup(func() { conn.Close() })
	hello := c.next()
	if hello["type"] != "hello" {
		t.Fatalf("first frame %v, want hello", hello)
	}
	return c, hello
}

func (c *wsc) sendJSON(v any) {
	c.t.Helper()
	if err := c.conn.WriteJSON(v); err != nil {
		c.t.Fatal(err)
	}
}

// next reads one frame (5 s at most).
func (c *wsc) next() map[string]any {
	c.t.Helper()
	_ = c.conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, b, err := c.conn.ReadMessage()
	if err != nil {
		c.t.Fatalf("read frame: %v", err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		c.t.Fatalf("frame %q: %v", b, err)
	}
	return m
}

// nextOf reads one frame and checks its type.
func (c *wsc) nextOf(typ string) map[string]any {
	c.t.Helper()
	m := c.next()
	if m["type"] != typ {
		c.t.Fatalf("frame %v, want type %q", m, typ)
	}
	return m
}

// closeCode reads until the server closes and returns the close code; the
// frames read before it are returned too.
func (c *wsc) closeCode() (int, []map[string]any) {
	c.t.Helper()
	var frames []map[string]any
	for {
		_ = c.conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, b, err := c.conn.ReadMessage()
		if err != nil {
			var ce *websocket.CloseError
			if errors.As(err, &ce) {
				return ce.Code, frames
			}
			c.t.Fatalf("read: %v, want a close frame", err)
		}
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		frames = append(frames, m)
	}
}

func (c *wsc) wantClose(code int) []map[string]any {
	c.t.Helper()
	got, frames := c.closeCode()
	if got != code {
		c.t.Fatalf("close code %d, want %d (frames before: %v)", got, code, frames)
	}
	return frames
}

func sendFrame(chat, cid, body string) map[string]any {
	return map[string]any{"type": "send", "chat": chat, "cid": cid, "body": body}
}

// history reads a chat's whole history as user over REST.
func (e *env) history(t *testing.T, user, chat string) []chatd.Message {
	t.Helper()
	var out []chatd.Message
	since := ""
	for {
		path := "/api/chats/" + chat + "/messages?limit=1000"
		if since != "" {
			path += "&since=" + since
		}
		page := e.mustCall(t, 200, user, "GET", path, nil)
		raw, _ := json.Marshal(page["messages"])
		var msgs []chatd.Message
		if err := json.Unmarshal(raw, &msgs); err != nil {
			t.Fatal(err)
		}
		out = append(out, msgs...)
		next, _ := page["next"].(string)
		if next == "" {
			return out
		}
		since = next
	}
}
