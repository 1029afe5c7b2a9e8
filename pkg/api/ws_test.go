package api_test

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chatd/chatd/pkg/api"
	"github.com/chatd/chatd/pkg/api/apitest"
	"github.com/fasthttp/websocket"
)

func TestWSAuthFailuresAre401BeforeUpgrade(t *testing.T) {
	e := mustEnv(t)
	for name, tok := range badTokens(t) {
		t.Run(name, func(t *testing.T) {
			for _, how := range []string{"query", "header"} {
				url, h := e.ws, http.Header{}
				if how == "query" {
					url += "?token=" + tok
				} else if tok != "" {
					h.Set("Authorization", "Bearer "+tok)
				}
				conn, resp, err := websocket.DefaultDialer.Dial(url, h)
				checkUpgrade(t, url, h, resp)
				if err == nil {
					conn.Close()
					t.Fatalf("%s: upgraded, want 401", how)
				}
				if resp == nil || resp.StatusCode != 401 {
					t.Errorf("%s: response %v, want 401", how, resp)
				}
			}
		})
	}
	t.Run("valid bearer header", func(t *testing.T) {
		h := http.Header{"Authorization": {"Bearer " + apitest.Token(t, testSecret, "alice", "")}}
		conn, _, err := websocket.DefaultDialer.Dial(e.ws, h)
		if err != nil {
			t.Fatal(err)
		}
		conn.Close()
	})
}

func TestWSOrigins(t *testing.T) {
	dialOrigin := func(e *env, origin string) int {
		h := http.Header{"Origin": {origin}}
		url := e.ws + "?token=" + apitest.Token(t, testSecret, "alice", "")
		conn, resp, err := websocket.DefaultDialer.Dial(url, h)
		checkUpgrade(t, url, h, resp)
		if err == nil {
			conn.Close()
			return 101
		}
		if resp == nil {
			t.Fatal(err)
		}
		return resp.StatusCode
	}
	e := mustEnv(t)
	same := strings.Replace(strings.TrimSuffix(e.ws, "/ws"), "ws://", "http://", 1)
	if got := dialOrigin(e, "https://evil.example"); got != 403 {
		t.Errorf("foreign origin: %d, want 403", got)
	}
	if got := dialOrigin(e, same); got != 101 {
		t.Errorf("same origin: %d, want 101", got)
	}
	listed := mustEnv(t, func(c *api.Config) { c.AllowedOrigins = []string{"https://app.example"} })
	if got := dialOrigin(listed, "https://app.example"); got != 101 {
		t.Errorf("listed origin: %d, want 101", got)
	}
	if got := dialOrigin(listed, "https://evil.example"); got != 403 {
		t.Errorf("unlisted origin: %d, want 403", got)
	}
}

func TestWSHelloCarriesLimits(t *testing.T) {
	e := mustEnv(t, func(c *api.Config) {
		c.Limits = api.Limits{Lease: 7 * time.Second, MaxAttempts: 4, MaxPending: 9, MaxBodyBytes: 100, MaxFrameBytes: 2000,
			RatePerSecond: 3, RateBurst: 5, Credits: 6, PingInterval: 8 * time.Second, IdleTimeout: 20 * time.Second}
	})
	_, hello := e.dial(t, "alice", "phone")
	if hello["user"] != "alice" || hello["device"] != "phone" {
		t.Errorf("hello identity: %v", hello)
	}
	want := map[string]float64{"lease_ms": 7000, "max_attempts": 4, "max_pending": 9, "max_body_bytes": 100, "max_frame_bytes": 2000,
		"rate_per_s": 3, "rate_burst": 5, "credits": 6, "ping_interval_ms": 8000, "idle_timeout_ms": 20000}
	limits := hello["limits"].(map[string]any)
	for k, v := range want {
		if limits[k] != v {
			t.Errorf("limits.%s = %v, want %v", k, limits[k], v)
		}
	}
	if len(limits) != len(want) {
		t.Errorf("limits %v, want exactly %v", limits, want)
	}
}

func TestWSSendAcceptedDeliveredAndIdempotent(t *testing.T) {
	e := mustEnv(t)
	chat := e.mustGroup(t, "alice", "bob")
	alice, _ := e.dial(t, "alice", "laptop")
	alicePhone, _ := e.dial(t, "alice", "phone")
	bob, _ := e.dial(t, "bob", "")

	alice.sendJSON(sendFrame(chat, "k1", "hello bob"))
	acc := alice.nextOf("accepted")
	if acc["cid"] != "k1" || acc["seq"] != 1.0 || acc["id"] == "" || acc["ts"] == "" {
		t.Fatalf("accepted: %v", acc)
	}
	for name, c := range map[string]*wsc{"bob": bob, "alice's phone": alicePhone} {
		m := c.nextOf("msg")
		if m["id"] != acc["id"] || m["cid"] != "k1" || m["chat"] != chat || m["from"] != "alice" || m["body"] != "hello bob" || m["seq"] != 1.0 || m["ts"] != acc["ts"] {
			t.Errorf("%s got %v, want the accepted message %v", name, m, acc)
		}
	}
	bob.sendJSON(map[string]any{"type": "ack", "ids": []string{acc["id"].(string)}})

	// A resend with the same cid is answered with the original and stored once,
	// on the WebSocket and on REST alike.
	alice.sendJSON(sendFrame(chat, "k1", "hello bob"))
	again := alice.nextOf("accepted")
	if again["id"] != acc["id"] || again["seq"] != acc["seq"] || again["ts"] != acc["ts"] {
		t.Errorf("resend: %v, want %v", again, acc)
	}
	rest := e.mustCall(t, 200, "alice", "POST", "/api/chats/"+chat+"/messages", map[string]any{"cid": "k1", "body": "hello bob"})
	if rest["id"] != acc["id"] {
		t.Errorf("REST resend of a WS cid: %v, want id %v", rest, acc["id"])
	}
	if msgs := e.history(t, "bob", chat); len(msgs) != 1 || msgs[0].ID != acc["id"] {
		t.Errorf("history %+v, want exactly the one message", msgs)
	}
	// The sending device got nothing but its answers.
	alice.sendJSON(map[string]any{"type": "ping"})
	alice.nextOf("pong")
}

func TestWSRejections(t *testing.T) {
	e := mustEnv(t, withBodyLimit(t, 10))
	chat := e.mustGroup(t, "alice", "bob")
	other := e.mustGroup(t, "carol")
	c, _ := e.dial(t, "alice", "")
	tests := []struct {
		name     string
		frame    map[string]any
		cid      string
		wantCode string
	}{
		{"missing cid", map[string]any{"type": "send", "chat": chat, "body": "x"}, "", "invalid"},
		{"missing body", map[string]any{"type": "send", "chat": chat, "cid": "k1"}, "k1", "invalid"},
		{"empty body", sendFrame(chat, "k2", ""), "k2", "invalid"},
		{"missing chat", map[string]any{"type": "send", "cid": "k3", "body": "x"}, "k3", "invalid"},
		{"too large", sendFrame(chat, "k4", strings.Repeat("x", 11)), "k4", "too_large"},
		{"unknown chat", sendFrame("nochat", "k5", "x"), "k5", "not_found"},
		{"not a member", sendFrame(other, "k6", "x"), "k6", "forbidden"},
		{"unknown type", map[string]any{"type": "shout"}, "", "invalid"},
		{"ack without ids", map[string]any{"type": "ack"}, "", "invalid"},
		{"read without upto", map[string]any{"type": "read", "chat": chat}, "", "invalid"},
		{"read of an unknown message", map[string]any{"type": "read", "chat": chat, "upto": "01HNOSUCHMESSAGE000000000"}, "", "not_found"},
		{"read by a non-member", map[string]any{"type": "read", "chat": other, "upto": "01HNOSUCHMESSAGE000000000"}, "", "forbidden"},
		{"read in an unknown chat", map[string]any{"type": "read", "chat": "nochat", "upto": "01HNOSUCHMESSAGE000000000"}, "", "not_found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c.sendJSON(tt.frame)
			r := c.nextOf("rejected")
			if r["code"] != tt.wantCode || r["cid"] != tt.cid || r["error"] == "" {
				t.Errorf("got %v, want code %q cid %q", r, tt.wantCode, tt.cid)
			}
		})
	}
	// None of it closed the connection or stored anything.
	c.sendJSON(sendFrame(chat, "ok", "fine"))
	if acc := c.nextOf("accepted"); acc["seq"] != 1.0 {
		t.Errorf("after rejections: %v, want seq 1", acc)
	}
}

func TestWSProtocolViolationsClose4400(t *testing.T) {
	e := mustEnv(t, func(c *api.Config) { c.Limits.MaxFrameBytes = 512; c.Abuse.Wait = -1 })
	chat := e.mustGroup(t, "alice")
	tests := []struct {
		name string
		typ  int
		data string
	}{
		{"not JSON", websocket.TextMessage, "hello"},
		{"truncated JSON", websocket.TextMessage, `{"type":"send"`},
		{"invalid UTF-8", websocket.TextMessage, "{\"type\":\"ping\",\"x\":\"\xff\"}"},
		{"binary frame", websocket.BinaryMessage, `{"type":"ping"}`},
		{"over max_frame_bytes", websocket.TextMessage, `{"type":"send","chat":"` + chat + `","cid":"k","body":"` + strings.Repeat("x", 600) + `"}`},
		{"far over max_frame_bytes", websocket.TextMessage, strings.Repeat("x", 1<<20)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _ := e.dial(t, "alice", "")
			// The server may close before a large write ends; the close
			// frame must still reach the client.
			_ = c.conn.WriteMessage(tt.typ, []byte(tt.data))
			c.wantClose(4400)
		})
	}
}

func TestWSSupersededSession(t *testing.T) {
	e := mustEnv(t)
	chat := e.mustGroup(t, "alice", "bob")
	old, _ := e.dial(t, "alice", "phone")
	other, _ := e.dial(t, "alice", "laptop")
	fresh, _ := e.dial(t, "alice", "phone")
	old.wantClose(4003)
	// The new session is the one registered for delivery; the other device is untouched.
	e.mustCall(t, 201, "bob", "POST", "/api/chats/"+chat+"/messages", map[string]any{"cid": "k", "body": "x"})
	fresh.nextOf("msg")
	other.nextOf("msg")
}

func TestWSIdleClose4002(t *testing.T) {
	e := mustEnv(t, func(c *api.Config) {
		c.Limits.IdleTimeout = 300 * time.Millisecond
		c.Limits.PingInterval = time.Hour // no server pings: the client stays silent
	})
	c, _ := e.dial(t, "alice", "")
	start := time.Now()
	c.wantClose(4002)
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("idle close after %v, want about 300ms", d)
	}
}

// The idle deadline moves at most every IdleTimeout/16 (a timer update per
// frame costs CPU, see internal/idle), yet a session is never cut before a full
// IdleTimeout of silence, however its frames fell, and not much after.
func TestWSIdleCloseNeverBeforeTimeout(t *testing.T) {
	const idle = 800 * time.Millisecond
	e := mustEnv(t, func(c *api.Config) {
		c.Limits.IdleTimeout = idle
		c.Limits.PingInterval = time.Hour // no server pings: only the client's frames count
	})
	c, _ := e.dial(t, "alice", "")
	var last time.Time
	for range 15 { // frames 20 ms apart, closer than the 50 ms the deadline moves by
		last = time.Now()
		c.sendJSON(map[string]any{"type": "ping"})
		c.nextOf("pong")
		time.Sleep(20 * time.Millisecond)
	}
	c.wantClose(4002)
	d := time.Since(last)
	if d < idle {
		t.Fatalf("closed %v after the last frame, before the idle timeout of %v", d, idle)
	}
	if d > idle+idle/16+time.Second {
		t.Fatalf("closed %v after the last frame, want about %v", d, idle)
	}
}

func TestWSKeepaliveResetsIdle(t *testing.T) {
	e := mustEnv(t, func(c *api.Config) {
		c.Limits.IdleTimeout = 400 * time.Millisecond
		c.Limits.PingInterval = 100 * time.Millisecond
	})
	c, _ := e.dial(t, "alice", "")
	// The client library answers server pings with pongs while it reads;
	// app-level pings keep it alive too.
	deadline := time.Now().Add(time.Second)
	for time.Now().Before(deadline) {
		c.sendJSON(map[string]any{"type": "ping"})
		c.nextOf("pong")
		time.Sleep(50 * time.Millisecond)
	}
}

func TestWSRateLimitThenAbuseClose4008(t *testing.T) {
	e := mustEnv(t, func(c *api.Config) {
		c.Limits.RatePerSecond, c.Limits.RateBurst = 1, 1
		c.Abuse.Rejects = 3
	})
	chat := e.mustGroup(t, "alice")
	c, _ := e.dial(t, "alice", "")
	c.sendJSON(sendFrame(chat, "k0", "x"))
	c.nextOf("accepted")
	for i := range 3 {
		c.sendJSON(sendFrame(chat, "k"+strconv.Itoa(i+1), "x"))
	}
	frames := c.wantClose(4008)
	if len(frames) != 3 {
		t.Fatalf("frames before the close: %v, want 3 rejections", frames)
	}
	for _, f := range frames {
		if f["type"] != "rejected" || f["code"] != "rate_limited" || f["cid"] == "" {
			t.Errorf("got %v, want rejected rate_limited with its cid", f)
		}
	}
}

// The connection's budget refills by Config.Now, not the wall clock: with
// the clock held still a spent budget stays spent, and moving it a second
// gives a send back.
func TestWSRateLimitFollowsTheClock(t *testing.T) {
	clock := &testClock{t: time.Now()}
	e := mustEnv(t, func(c *api.Config) {
		c.Limits.RatePerSecond, c.Limits.RateBurst = 1, 1
		c.Now = clock.now
	})
	chat := e.mustGroup(t, "alice")
	c, _ := e.dial(t, "alice", "")
	c.sendJSON(sendFrame(chat, "k1", "x"))
	c.nextOf("accepted")
	c.sendJSON(sendFrame(chat, "k2", "x"))
	if m := c.nextOf("rejected"); m["code"] != "rate_limited" {
		t.Fatalf("second send: got %v, want rejected rate_limited", m)
	}
	clock.add(time.Second)
	c.sendJSON(sendFrame(chat, "k3", "x"))
	c.nextOf("accepted")
	c.sendJSON(sendFrame(chat, "k4", "x"))
	if m := c.nextOf("rejected"); m["code"] != "rate_limited" {
		t.Fatalf("fourth send: got %v, want rejected rate_limited", m)
	}
}

func TestWSReadReceipt(t *testing.T) {
	e := mustEnv(t)
	chat := e.mustGroup(t, "alice", "bob")
	alice, _ := e.dial(t, "alice", "")
	bob, _ := e.dial(t, "bob", "")
	alice.sendJSON(sendFrame(chat, "k", "read me"))
	id := alice.nextOf("accepted")["id"].(string)
	bob.nextOf("msg")
	bob.sendJSON(map[string]any{"type": "read", "chat": chat, "upto": id})
	r := alice.nextOf("receipt")
	if r["chat"] != chat || r["user"] != "bob" || r["upto"] != id || r["seq"] != 1.0 {
		t.Errorf("receipt %v, want bob read %s up to %s, seq 1", r, chat, id)
	}
	// The read state is stored: marking an older position keeps this one.
	pos, err := e.store.MarkRead(context.Background(), "bob", chat, id)
	if err != nil || pos.Seq != 1 {
		t.Errorf("stored read state: %d, %v; want 1", pos.Seq, err)
	}
}

func TestWSShutdownClosesWithGoingAway(t *testing.T) {
	e := mustEnv(t)
	a, _ := e.dial(t, "alice", "")
	b, _ := e.dial(t, "bob", "")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- e.srv.Shutdown(ctx) }()
	a.wantClose(websocket.CloseGoingAway)
	b.wantClose(websocket.CloseGoingAway)
	if err := <-done; err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	if _, _, err := websocket.DefaultDialer.Dial(e.ws+"?token="+apitest.Token(t, testSecret, "alice", ""), nil); err == nil {
		t.Error("dial after shutdown succeeded")
	}
}
