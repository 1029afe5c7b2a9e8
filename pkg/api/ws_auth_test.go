package api_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/chatd/chatd/pkg/api"
	"github.com/fasthttp/websocket"
	"github.com/golang-jwt/jwt/v5"
	"github.com/prometheus/client_golang/prometheus"
)

// shortToken signs a token for user (and dev, when not "") that expires in
// about ttl, and returns it with its exp. The exp is whole seconds, as in
// every JWT, so it lies up to a second before now+ttl.
func shortToken(t *testing.T, user, dev string, ttl time.Duration) (string, time.Time) {
	t.Helper()
	exp := time.Now().Add(ttl).Unix()
	claims := jwt.MapClaims{"sub": user, "exp": exp}
	if dev != "" {
		claims["dev"] = dev
	}
	return signed(t, jwt.SigningMethodHS256, testSecret, claims), time.Unix(exp, 0)
}

// dialToken connects with tok and returns the client with its hello read.
func (e *env) dialToken(t *testing.T, tok string) *wsc {
	t.Helper()
	conn, _, err := websocket.DefaultDialer.Dial(e.ws+"?token="+tok, nil)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	c := &wsc{t: t, conn: conn}
	t.Cleanup(func() { conn.Close() })
	c.nextOf("hello")
	return c
}

// wantExpiryClose waits for the 4401 close and checks that it came at exp,
// within the contract's second after it.
func (c *wsc) wantExpiryClose(exp time.Time) {
	c.t.Helper()
	c.wantClose(4401)
	at := time.Now()
	if at.Before(exp) || at.After(exp.Add(time.Second)) {
		c.t.Fatalf("closed 4401 at %v from exp, want within [0, 1s]", at.Sub(exp))
	}
}

// refresh sends an auth frame and checks the authed answer's exp.
func (c *wsc) refresh(tok string, exp time.Time) {
	c.t.Helper()
	c.sendJSON(map[string]any{"type": "auth", "token": tok})
	got := c.nextOf("authed")
	if got["exp"] != float64(exp.Unix()) {
		c.t.Fatalf("authed %v, want exp %d", got, exp.Unix())
	}
}

func TestWSTokenExpiryCloses4401(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	e := mustEnv(t, func(c *api.Config) { c.Registry = reg })
	tok, exp := shortToken(t, "alice", "phone", 2*time.Second)
	c := e.dialToken(t, tok)
	c.wantExpiryClose(exp)
	waitMetric(t, reg, "chatd_ws_token_expired_total", 1)
}

func TestWSTokenRefreshKeepsSession(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	e := mustEnv(t, func(c *api.Config) { c.Registry = reg })
	chat := e.mustGroup(t, "bob", "alice")
	tok, exp := shortToken(t, "alice", "phone", 2*time.Second)
	alice := e.dialToken(t, tok)
	bob, _ := e.dial(t, "bob", "")

	tok2, exp2 := shortToken(t, "alice", "phone", time.Hour)
	alice.refresh(tok2, exp2)
	time.Sleep(time.Until(exp.Add(1200 * time.Millisecond)))

	// Past the first token's exp and its grace second: the same connection
	// still sends and receives.
	bob.sendJSON(sendFrame(chat, "k1", "after exp"))
	bob.nextOf("accepted")
	if m := alice.nextOf("msg"); m["body"] != "after exp" {
		t.Fatalf("alice got %v, want the message sent after exp", m)
	}
	alice.sendJSON(map[string]any{"type": "ping"})
	alice.nextOf("pong")
	waitMetric(t, reg, "chatd_ws_token_refreshes_total", 1)
	waitMetric(t, reg, "chatd_ws_token_expired_total", 0)
}

func TestWSTokenRefreshEarlierExpIsHonoured(t *testing.T) {
	t.Parallel()
	e := mustEnv(t)
	alice, _ := e.dial(t, "alice", "phone") // an hour's token
	tok, exp := shortToken(t, "alice", "phone", 2*time.Second)
	alice.refresh(tok, exp)
	alice.wantExpiryClose(exp)
}

// A token without dev speaks for the device "default", so it refreshes a
// session opened with dev "default" and the other way round.
func TestWSTokenRefreshMissingDevIsDefault(t *testing.T) {
	t.Parallel()
	e := mustEnv(t)
	tests := []struct {
		name          string
		dialDev, dev2 string
	}{
		{"no dev refreshed with dev default", "", "default"},
		{"dev default refreshed with no dev", "default", ""},
	}
	for i, tt := range tests {
		user := fmt.Sprintf("u%d", i)
		c, _ := e.dial(t, user, tt.dialDev)
		tok, exp := shortToken(t, user, tt.dev2, time.Hour)
		c.refresh(tok, exp)
	}
}

func TestWSTokenRefreshRefusedCloses4401(t *testing.T) {
	t.Parallel()
	e := mustEnv(t)
	other := []byte("another-secret-another-secret-00")
	hour := time.Now().Add(time.Hour).Unix()
	tests := []struct {
		name  string
		token func(user string) string
	}{
		{"other sub", func(string) string { tok, _ := shortToken(t, "mallory", "phone", time.Hour); return tok }},
		{"other dev", func(u string) string { tok, _ := shortToken(t, u, "laptop", time.Hour); return tok }},
		{"missing dev on a phone session", func(u string) string { tok, _ := shortToken(t, u, "", time.Hour); return tok }},
		{"expired", func(u string) string {
			return signed(t, jwt.SigningMethodHS256, testSecret, jwt.MapClaims{"sub": u, "dev": "phone", "exp": time.Now().Add(-time.Second).Unix()})
		}},
		{"other secret", func(u string) string {
			return signed(t, jwt.SigningMethodHS256, other, jwt.MapClaims{"sub": u, "dev": "phone", "exp": hour})
		}},
		{"no exp", func(u string) string {
			return signed(t, jwt.SigningMethodHS256, testSecret, jwt.MapClaims{"sub": u, "dev": "phone"})
		}},
		{"garbage", func(string) string { return "not.a.jwt" }},
		{"empty", func(string) string { return "" }},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			user := fmt.Sprintf("u%d", i)
			c, _ := e.dial(t, user, "phone")
			c.sendJSON(map[string]any{"type": "auth", "token": tt.token(user)})
			c.wantClose(4401)
		})
	}
}
