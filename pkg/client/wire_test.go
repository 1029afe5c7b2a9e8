package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/pkg/client"
	"github.com/fasthttp/websocket"
)

// wireServer speaks the wire contract scripted per connection. It is a fake
// only to inject the faults a real chatd would not produce on demand (a
// close right after a send, a delivery beyond a gap); it records every
// frame the client sends.
type wireServer struct {
	t     *testing.T
	mu    sync.Mutex
	conns int
	sends []map[string]any
	acks  []string
	hist  []chatd.Message // history of chat "c"
}

// frames reads client frames into out until the connection ends or the
// handler stops listening (done), so it never outlives its connection.
func (w *wireServer) frames(conn *websocket.Conn, out chan<- map[string]any, done <-chan struct{}) {
	defer close(out)
	for {
		var f map[string]any
		if err := conn.ReadJSON(&f); err != nil {
			return
		}
		w.mu.Lock()
		switch f["type"] {
		case "send":
			w.sends = append(w.sends, f)
		case "ack":
			for _, id := range f["ids"].([]any) {
				w.acks = append(w.acks, id.(string))
			}
		}
		w.mu.Unlock()
		select {
		case out <- f:
		case <-done:
			return
		}
	}
}

func (w *wireServer) serveWS(rw http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "Bearer tok" {
		http.Error(rw, "no", http.StatusUnauthorized)
		return
	}
	up := websocket.Upgrader{}
	conn, err := up.Upgrade(rw, r, nil)
	if err != nil {
		return
	}
	defer conn.Close()
	w.mu.Lock()
	w.conns++
	n := w.conns
	w.mu.Unlock()
	conn.WriteJSON(map[string]any{"type": "hello", "user": "alice", "device": "d1",
		"limits": map[string]int{"credits": 1, "ping_interval_ms": 10000}})
	in := make(chan map[string]any)
	done := make(chan struct{})
	defer close(done)
	go w.frames(conn, in, done)
	for f := range in {
		if f["type"] != "send" {
			continue
		}
		if n == 1 {
			// First connection: deliver seq 3 (beyond the gap of 2) and drop
			// the connection before answering the send.
			conn.WriteJSON(map[string]any{"type": "msg", "id": "m3", "chat": "c", "from": "bob", "body": "three", "seq": 3, "ts": time.Now()})
			conn.WriteJSON(map[string]any{"type": "msg", "id": "m3", "chat": "c", "from": "bob", "body": "three", "seq": 3, "ts": time.Now()})
			time.Sleep(100 * time.Millisecond) // let the acks arrive
			conn.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(client.CloseOverloaded, "too many un-acked"))
			return
		}
		conn.WriteJSON(map[string]any{"type": "accepted", "cid": f["cid"], "id": "m4", "seq": 4, "ts": time.Now()})
	}
}

func (w *wireServer) serveHistory(rw http.ResponseWriter, r *http.Request) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []chatd.Message
	for _, m := range w.hist {
		if r.URL.Query().Get("after_seq") < "1" || m.Seq > 1 {
			out = append(out, m)
		}
	}
	json.NewEncoder(rw).Encode(map[string]any{"messages": out, "next": nil})
}

// The client's five duties against a scripted server: the live frame beyond
// a gap waits for history, duplicates are acked but handed out once, the
// unanswered send is resent with the same cid after a 4001 close, and the
// application sees 1..4 exactly once in order.
func TestWireDuties(t *testing.T) {
	w := &wireServer{t: t, hist: []chatd.Message{
		{ID: "m1", Chat: "c", From: "bob", Body: "one", Seq: 1},
		{ID: "m2", Chat: "c", From: "bob", Body: "two", Seq: 2},
	}}
	mux := http.NewServeMux()
	mux.HandleFunc("/ws", w.serveWS)
	mux.HandleFunc("/api/chats/c/messages", w.serveHistory)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	c, err := client.New(client.Config{URL: srv.URL, Token: "tok", BackoffMin: 10 * time.Millisecond, GapWait: time.Hour})
	if err != nil {
		t.Fatalf("new: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	runErr := make(chan error, 1)
	go func() { runErr <- c.Run(ctx) }()

	sendErr := make(chan error, 1)
	var acc client.Accepted
	go func() {
		var err error
		acc, err = c.SendCID(ctx, "c", "cid-1", "four")
		sendErr <- err
	}()

	var seqs []int64
	var closes []int
	for len(seqs) < 4 {
		select {
		case ev := <-c.Events():
			switch ev.Kind {
			case client.EventMessage:
				seqs = append(seqs, ev.Message.Seq)
			case client.EventState:
				if !ev.State.Connected {
					closes = append(closes, ev.State.CloseCode)
				}
			}
		case <-ctx.Done():
			t.Fatalf("got seqs %v before timeout, want [1 2 3 4]", seqs)
		}
	}
	if err := <-sendErr; err != nil {
		t.Fatalf("send: %v", err)
	}
	if acc.Seq != 4 || acc.ID != "m4" {
		t.Fatalf("got accepted %+v, want seq 4 id m4", acc)
	}
	for i, s := range seqs {
		if s != int64(i+1) {
			t.Fatalf("got seqs %v, want [1 2 3 4]", seqs)
		}
	}
	if len(closes) != 1 || closes[0] != client.CloseOverloaded {
		t.Fatalf("got closes %v, want [4001]", closes)
	}
	cancel()
	if err := <-runErr; err != nil {
		t.Fatalf("run: %v", err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.sends) != 2 || w.sends[0]["cid"] != "cid-1" || w.sends[1]["cid"] != "cid-1" {
		t.Fatalf("got sends %v, want cid-1 twice (resend after reconnect)", w.sends)
	}
	if len(w.acks) != 2 || w.acks[0] != "m3" || w.acks[1] != "m3" {
		t.Fatalf("got acks %v, want m3 twice (duplicates are acked too)", w.acks)
	}
	st := c.Stats()
	if st.DuplicateFrames != 1 || st.Resends != 1 || st.Disconnects[client.CloseOverloaded] != 1 || st.DeliveredSelf != 1 {
		t.Fatalf("got stats %+v, want 1 duplicate, 1 resend, one 4001, 1 self", st)
	}
}

func TestRunStopsOnUnauthorized(t *testing.T) {
	w := &wireServer{t: t}
	srv := httptest.NewServer(http.HandlerFunc(w.serveWS))
	t.Cleanup(srv.Close)
	c, err := client.New(client.Config{URL: srv.URL, Token: "bad"})
	if err != nil {
		t.Fatalf("new: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Run(ctx); !errors.Is(err, client.ErrUnauthorized) {
		t.Fatalf("got %v, want ErrUnauthorized", err)
	}
	if _, err := c.Send(ctx, "c", "x"); !errors.Is(err, chatd.ErrClosed) {
		t.Fatalf("send after Run returned: got %v, want ErrClosed", err)
	}
}
