package api_test

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chatd/chatd/internal/testmetric"
	"github.com/chatd/chatd/pkg/api"
	"github.com/chatd/chatd/pkg/api/apitest"
	"github.com/fasthttp/websocket"
	"github.com/prometheus/client_golang/prometheus"
)

// closeBound is the most a silent or trickling client may hold a
// connection with the default timeouts.
const closeBound = 15 * time.Second

func (e *env) addr() string { return strings.TrimPrefix(e.base, "http://") }

// waitClosed reads c until the server closes it and fails t unless that
// happens within bound.
func waitClosed(t *testing.T, c net.Conn, start time.Time, bound time.Duration) {
	t.Helper()
	_ = c.SetReadDeadline(start.Add(bound))
	_, err := io.Copy(io.Discard, c)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("connection still open after %v, want it closed by the server", bound)
	}
	t.Logf("closed by the server after %v", time.Since(start).Round(100*time.Millisecond))
}

// A client that connects and sends nothing is closed by the server with
// the default timeouts, within closeBound.
func TestSilentClientIsClosed(t *testing.T) {
	t.Parallel()
	e := mustEnv(t)
	c, err := net.Dial("tcp", e.addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	waitClosed(t, c, time.Now(), closeBound)
}

// A client that trickles its header, one byte a second, is closed with the
// default timeouts within closeBound: the read timeout bounds the whole
// request, not each read.
func TestTricklingClientIsClosed(t *testing.T) {
	t.Parallel()
	e := mustEnv(t)
	c, err := net.Dial("tcp", e.addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		header := "GET /healthz HTTP/1.1\r\nHost: x\r\n" + strings.Repeat("X-Pad: y\r\n", 10)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for i := 0; i < len(header); i++ {
			if _, err := c.Write([]byte{header[i]}); err != nil {
				return
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	defer func() { close(stop); <-done }()
	waitClosed(t, c, start, closeBound)
}

// A WebSocket is not a plain request: it lives past the HTTP read timeout
// as long as it keeps talking (the idle reaper is its only read timeout).
func TestWebSocketOutlivesReadTimeout(t *testing.T) {
	e := mustEnv(t, func(c *api.Config) { c.HTTP.ReadTimeout = 500 * time.Millisecond })
	alice, _ := e.dial(t, "alice", "")
	chat := e.mustGroup(t, "alice", "bob")
	deadline := time.Now().Add(2 * time.Second) // four read timeouts
	for i := 0; time.Now().Before(deadline); i++ {
		alice.sendJSON(sendFrame(chat, "c"+string(rune('a'+i)), "hi"))
		alice.nextOf("accepted")
		time.Sleep(200 * time.Millisecond)
	}
	// And a plain request on a fresh connection still works.
	e.mustCall(t, 200, "", "GET", "/healthz", nil)
}

// A WebSocket that only answers the server's pings also outlives the read
// timeout: once upgraded, the idle reaper alone decides.
func TestQuietWebSocketOutlivesReadTimeout(t *testing.T) {
	e := mustEnv(t, func(c *api.Config) {
		c.HTTP.ReadTimeout = 300 * time.Millisecond
		c.Limits.PingInterval = 200 * time.Millisecond
		c.Limits.IdleTimeout = time.Second
	})
	chat := e.mustGroup(t, "alice", "bob")
	url := e.ws + "?token=" + apitest.Token(t, testSecret, "alice", "")
	conn, resp, err := websocket.DefaultDialer.Dial(url, nil)
	checkUpgrade(t, url, nil, resp)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// The reader answers pings (the library does, while reading) and hands
	// frames over; it ends when the connection does.
	frames := make(chan map[string]any, 16)
	readErr := make(chan error, 1)
	go func() {
		defer close(frames)
		for {
			var m map[string]any
			if err := conn.ReadJSON(&m); err != nil {
				readErr <- err
				return
			}
			frames <- m
		}
	}()
	next := func() map[string]any {
		t.Helper()
		select {
		case m, ok := <-frames:
			if !ok {
				t.Fatalf("connection ended: %v", <-readErr)
			}
			return m
		case <-time.After(5 * time.Second):
			t.Fatal("no frame within 5 s")
		}
		return nil
	}
	if m := next(); m["type"] != "hello" {
		t.Fatalf("first frame %v, want hello", m)
	}
	time.Sleep(1500 * time.Millisecond) // five read timeouts, silent but for pongs
	if err := conn.WriteJSON(sendFrame(chat, "quiet", "still here")); err != nil {
		t.Fatal(err)
	}
	if m := next(); m["type"] != "accepted" {
		t.Fatalf("frame %v, want accepted", m)
	}
}

// A header larger than MaxHeaderBytes is refused with 431 instead of being
// buffered. The server answers as soon as the header outgrows its buffer
// and closes with the rest unread, while Go's transport may still be
// writing the header (in 4 KiB pieces): that try ends in a broken pipe or a
// reset instead of the answer, and is made again. Every answer must be 431.
func TestOversizedHeaderIsRefused(t *testing.T) {
	e := mustEnv(t)
	const tries = 5
	for try := 1; ; try++ {
		req, err := http.NewRequest("GET", e.base+"/healthz", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("X-Big", strings.Repeat("a", 8<<10))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			if try == tries {
				t.Fatalf("no answer in %d tries; the last: %v", tries, err)
			}
			continue
		}
		raw, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		checkOpenAPI(t, req, nil, resp, raw)
		if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
			t.Fatalf("got status %d, want 431", resp.StatusCode)
		}
		return
	}
}

// Beyond MaxConnections a new connection is answered 503 and closed, and
// counted; the gauge shows the open ones.
func TestConnectionCap(t *testing.T) {
	reg := prometheus.NewRegistry()
	e := mustEnv(t, func(c *api.Config) { c.HTTP.MaxConnections = 2; c.Registry = reg })
	var held []net.Conn
	for range 2 {
		c, err := net.Dial("tcp", e.addr())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		held = append(held, c)
	}
	waitMetric(t, reg, "chatd_http_connections", 2)

	// A client that sends no request gets the refusal all the same, after
	// the wait for one; it must be a documented answer to any call.
	c, err := net.Dial("tcp", e.addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("third connection: %v, want a 503", err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("third connection: status %d, want 503", resp.StatusCode)
	}
	for _, call := range []struct{ method, path string }{{"GET", "/healthz"}, {"GET", "/api/chats"}, {"POST", "/api/chats/c1/messages"}} {
		req, err := http.NewRequest(call.method, e.base+call.path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+apitest.Token(t, testSecret, "alice", ""))
		checkOpenAPI(t, req, nil, resp, body)
	}
	waitMetric(t, reg, "chatd_http_connections_refused_total", 1)

	// A slot frees when a held connection closes.
	held[0].Close()
	waitMetric(t, reg, "chatd_http_connections", 1)
	e.mustCall(t, 200, "", "GET", "/healthz", nil)
}

// waitMetric waits up to 5 s for the named metric (summed) to equal want.
func waitMetric(t *testing.T, reg *prometheus.Registry, name string, want float64) {
	t.Helper()
	var got float64
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if got = testmetric.Sum(t, reg, name); got == want {
			return
		}
	}
	t.Fatalf("%s = %v, want %v", name, got, want)
}

// A body over the limit is answered 413, and the client gets that answer:
// chatd refuses it before reading it, and a socket closed with the body
// unread would be reset, which makes the client drop the 413 it has not
// read yet (a Go client saw a reset for about two thirds of 2 MB posts).
func TestOversizedBodyIsAnswered413NotReset(t *testing.T) {
	t.Parallel()
	e := mustEnv(t)
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	postsAnswered(t, client, e.base+"/api/chats", apitest.Token(t, testSecret, "alice", ""), 2<<20, http.StatusRequestEntityTooLarge)
}

// A connection over MaxConnections gets its 503 even when its client sends
// a request with a body: the refusal is written at accept and the socket
// closed with the request unread, which the kernel answers with a reset
// that makes the client drop the 503 it has not read yet.
func TestRefusalOverCapIsAnsweredNotReset(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	e := mustEnv(t, func(c *api.Config) { c.HTTP.MaxConnections = 1; c.Registry = reg })
	held, err := net.Dial("tcp", e.addr())
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	waitMetric(t, reg, "chatd_http_connections", 1)

	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	postsAnswered(t, client, e.base+"/api/chats", "", 256<<10, http.StatusServiceUnavailable)
	waitMetric(t, reg, "chatd_http_connections_refused_total", 40)
}

// postsAnswered posts a JSON body of about size bytes to url 40 times and
// fails the test unless every post is answered with status want: a reset
// in its place is the failure these tests are about.
func postsAnswered(t *testing.T, client *http.Client, url, tok string, size, want int) {
	t.Helper()
	body := []byte(`{"x":"` + strings.Repeat("a", size) + `"}`)
	resets := 0
	var last error
	for range 40 {
		req, err := http.NewRequest("POST", url, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			resets++
			last = err
			continue
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Fatalf("got status %d, want %d", resp.StatusCode, want)
		}
	}
	if resets > 0 {
		t.Fatalf("%d of 40 posts of %d bytes got no answer, the last: %v; want a %d every time", resets, len(body), last, want)
	}
}
