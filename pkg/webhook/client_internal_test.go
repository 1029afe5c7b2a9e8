package webhook

import (
	"bufio"
	"context"
	"crypto/x509"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

const internalSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

func testHook(url string, timeout time.Duration) *hook {
	key, _ := ParseSecret(internalSecret)
	return &hook{cfg: &Config{Timeout: timeout, Workers: 1, Now: time.Now}, ep: Endpoint{URL: url, Secret: internalSecret}, signer: NewSigner(key)}
}

// mustSilent is an endpoint that takes connections and requests and never
// answers.
func mustSilent(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		var conns []net.Conn
		defer func() {
			for _, c := range conns {
				c.Close()
			}
		}()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
	})
	return "http://" + ln.Addr().String() + "/hook"
}

func mustServer(t *testing.T, h http.HandlerFunc) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// A node shutting down does not wait out Timeout for an endpoint that
// never answers: the post is abandoned at once and the event given back.
func TestAttemptGivesBackWhenCtxEndsMidPost(t *testing.T) {
	h := testHook(mustSilent(t), time.Minute)
	h.cfg.MaxAttempts = 1
	ctx, cancel := context.WithCancel(context.Background())
	c := newClient(ctx, h.cfg, h.ep.URL, 1)
	defer c.close()
	time.AfterFunc(100*time.Millisecond, cancel)
	start := time.Now()
	out, _ := h.attempt(ctx, c, item{id: "msg_1", body: []byte(`{}`)}, 1)
	if took := time.Since(start); took > time.Second {
		t.Errorf("the post took %v after its ctx ended, want under 1s", took)
	}
	if out != givenBack {
		t.Errorf("got outcome %d, want givenBack (%d)", out, givenBack)
	}
}

func TestPostTimesOut(t *testing.T) {
	h := testHook(mustSilent(t), 200*time.Millisecond)
	c := newClient(context.Background(), h.cfg, h.ep.URL, 1)
	defer c.close()
	start := time.Now()
	res := h.post(c, "msg_1", []byte(`{}`))
	if res.err == nil {
		t.Fatal("a post nobody answered succeeded")
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("a post with Timeout 200ms took %v", took)
	}
}

// What one post sends and how each answer counts.
func TestPostAnswers(t *testing.T) {
	big := strings.Repeat("x", 1<<20)
	for _, tc := range []struct {
		name       string
		answer     http.HandlerFunc
		wantErr    string // "" means delivered
		retryAfter time.Duration
	}{
		{"204", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }, "", 0},
		{"200 with a body over 64 KiB", func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte(big)) }, "", 0},
		{"chunked 200 over 64 KiB", func(w http.ResponseWriter, _ *http.Request) {
			for range 16 {
				w.Write([]byte(big[:64<<10]))
				w.(http.Flusher).Flush()
			}
		}, "", 0},
		{"503 with Retry-After", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Retry-After", "7")
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write([]byte(big))
		}, "endpoint answered 503 Service Unavailable", 7 * time.Second},
		{"redirect not followed", func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/hook" {
				http.Redirect(w, r, "/elsewhere", http.StatusFound)
			}
		}, "endpoint answered 302 Found", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := mustServer(t, func(w http.ResponseWriter, r *http.Request) {
				if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" ||
					r.Header.Get("User-Agent") != "chatd-webhook" || r.Header.Get("webhook-signature") == "" {
					t.Errorf("got %s %v, want a signed JSON POST from chatd-webhook", r.Method, r.Header)
				}
				tc.answer(w, r)
			})
			h := testHook(srv.URL+"/hook", 5*time.Second)
			c := newClient(context.Background(), h.cfg, h.ep.URL, 1)
			defer c.close()
			res := h.post(c, "msg_1", []byte(`{}`))
			switch {
			case tc.wantErr == "" && res.err != nil:
				t.Fatalf("got %v, want delivered", res.err)
			case tc.wantErr != "" && (res.err == nil || res.err.Error() != tc.wantErr || !errors.Is(res.err, errStatus)):
				t.Fatalf("got %v, want %q wrapping errStatus", res.err, tc.wantErr)
			}
			if res.retryAfter != tc.retryAfter {
				t.Errorf("got Retry-After %v, want %v", res.retryAfter, tc.retryAfter)
			}
		})
	}
}

// A kept connection the endpoint closed while idle costs no attempt: the
// post goes again once on a new connection.
func TestPostRetriesAStaleConnection(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			// One answer that promises keep-alive, then the close.
			req, err := http.ReadRequest(bufio.NewReader(conn))
			if err == nil {
				req.Body.Close()
				conn.Write([]byte("HTTP/1.1 204 No Content\r\n\r\n"))
			}
			conn.Close()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
	})
	h := testHook("http://"+ln.Addr().String()+"/hook", 5*time.Second)
	c := newClient(context.Background(), h.cfg, h.ep.URL, 1)
	defer c.close()
	for i := range 3 {
		if res := h.post(c, "msg_1", []byte(`{}`)); res.err != nil {
			t.Fatalf("post %d: %v", i, res.err)
		}
		time.Sleep(50 * time.Millisecond) // the close reaches the client
	}
}

func TestPostOverTLS(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshake is expected
	srv.StartTLS()
	t.Cleanup(srv.Close)
	h := testHook(srv.URL+"/hook", 5*time.Second)
	c := newClient(context.Background(), h.cfg, h.ep.URL, 1)
	defer c.close()
	if res := h.post(c, "msg_1", []byte(`{}`)); res.err == nil {
		t.Fatal("a post to a server the system roots do not know succeeded")
	}
	roots := x509.NewCertPool()
	roots.AddCert(srv.Certificate())
	c2 := newClient(context.Background(), h.cfg, h.ep.URL, 1)
	defer c2.close()
	c2.hc.TLSConfig = srv.Client().Transport.(*http.Transport).TLSClientConfig.Clone()
	c2.hc.TLSConfig.RootCAs = roots
	if res := h.post(c2, "msg_1", []byte(`{}`)); res.err != nil {
		t.Fatalf("got %v, want delivered over TLS", res.err)
	}
}
