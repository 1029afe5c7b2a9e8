package api_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chatd/chatd/pkg/api"
	"github.com/chatd/chatd/pkg/api/apitest"
	"github.com/fasthttp/websocket"
)

func mustServiceToken(t *testing.T, name, device string) string {
	t.Helper()
	tok, err := api.IssueServiceToken(testSecret, name, device, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// dialHello connects with tok and returns the client and its hello.
func (e *env) dialHello(t *testing.T, tok string) (*wsc, map[string]any) {
	t.Helper()
	conn, resp, err := websocket.DefaultDialer.Dial(e.ws+"?token="+tok, nil)
	checkUpgrade(t, e.ws+"?token="+tok, nil, resp)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	c := &wsc{t: t, conn: conn}
	t.Cleanup(func() { conn.Close() })
	return c, c.nextOf("hello")
}

// rateOf is a hello's announced token bucket.
func rateOf(hello map[string]any) string {
	l := hello["limits"].(map[string]any)
	return fmt.Sprintf("%v/%v", l["rate_per_s"], l["rate_burst"])
}

// claimsOf decodes a token's payload, unverified.
func claimsOf(t *testing.T, tok string) map[string]any {
	t.Helper()
	parts := strings.Split(tok, ".")
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var c map[string]any
	if err := json.Unmarshal(raw, &c); err != nil {
		t.Fatal(err)
	}
	return c
}

func withServiceRate(perSecond, burst int) func(*api.Config) {
	return func(c *api.Config) {
		c.Limits.RatePerSecond, c.Limits.RateBurst = 3, 5
		c.Service.RatePerSecond, c.Service.Burst = perSecond, burst
	}
}

// A service token is a token with sub = the name and svc: true; it verifies
// on REST and WebSocket, and its sessions announce the service's bucket.
func TestServiceTokenIssuedAndVerified(t *testing.T) {
	e := mustEnv(t, withServiceRate(70, 90))
	tok := mustServiceToken(t, "echobot", "")
	if c := claimsOf(t, tok); c["sub"] != "echobot" || c["svc"] != true {
		t.Fatalf("service token claims %v, want sub echobot and svc true", c)
	}
	if c := claimsOf(t, apitest.Token(t, testSecret, "alice", "")); c["svc"] != nil {
		t.Fatalf("user token claims %v, want no svc", c)
	}
	if got, body, _ := e.callToken(t, tok, "GET", "/api/chats", nil); got != http.StatusOK {
		t.Fatalf("REST with a service token: %d %v, want 200", got, body)
	}
	_, hello := e.dialHello(t, tok)
	if hello["user"] != "echobot" || hello["device"] != "default" || rateOf(hello) != "70/90" {
		t.Fatalf("service hello %v, want echobot/default with rate 70/90", hello)
	}
	_, hello = e.dialHello(t, apitest.Token(t, testSecret, "alice", ""))
	if rateOf(hello) != "3/5" {
		t.Fatalf("person hello rate %s, want 3/5", rateOf(hello))
	}
	if _, err := api.IssueServiceToken(testSecret, "no such name!", "", time.Hour); err == nil {
		t.Fatal("IssueServiceToken accepted a name that is not a user id")
	}
}

// A service session cannot turn into a person's by an in-band refresh: its
// limits were chosen for what it is.
func TestServiceRefreshKeepsTheKind(t *testing.T) {
	e := mustEnv(t)
	c, _ := e.dialHello(t, mustServiceToken(t, "echobot", "d1"))
	c.sendJSON(map[string]any{"type": "auth", "token": mustServiceToken(t, "echobot", "d1")})
	c.nextOf("authed")
	c.sendJSON(map[string]any{"type": "auth", "token": apitest.Token(t, testSecret, "echobot", "d1")})
	c.wantClose(4401)
}

// An identity provider marks a service with a boolean claim, svc unless
// configured otherwise; a claim of another type is refused.
func TestJWKSServiceClaim(t *testing.T) {
	p := mustIDP(t)
	key := p.add("k1", "ES256")
	e := mustEnv(t, withServiceRate(70, 90), func(c *api.Config) {
		c.JWKS = api.JWKSConfig{URL: p.srv.URL, Issuer: testIssuer, Audience: testAudience}
	})
	tests := []struct {
		name   string
		claims map[string]any
		want   string // the hello's rate, or "401"
	}{
		{"svc true", with(idpClaims("backend"), "svc", true), "70/90"},
		{"svc false", with(idpClaims("alice"), "svc", false), "3/5"},
		{"no svc", idpClaims("alice"), "3/5"},
		{"svc a string", with(idpClaims("backend"), "svc", "true"), "401"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tok := sign(t, key, "k1", tt.claims)
			if tt.want == "401" {
				e.wantUpgrade401(t, tok)
				return
			}
			if _, hello := e.dialHello(t, tok); rateOf(hello) != tt.want {
				t.Fatalf("hello rate %s, want %s", rateOf(hello), tt.want)
			}
		})
	}

	named := mustEnv(t, withServiceRate(70, 90), func(c *api.Config) {
		c.JWKS = api.JWKSConfig{URL: p.srv.URL, Issuer: testIssuer, Audience: testAudience, ServiceClaim: "https://app.example/svc"}
	})
	tok := sign(t, key, "k1", with(idpClaims("backend"), "https://app.example/svc", true))
	if _, hello := named.dialHello(t, tok); rateOf(hello) != "70/90" {
		t.Fatalf("configured claim: hello rate %s, want 70/90", rateOf(hello))
	}
	tok = sign(t, key, "k1", with(idpClaims("backend"), "svc", true))
	if _, hello := named.dialHello(t, tok); rateOf(hello) != "3/5" {
		t.Fatalf("svc under a configured claim name: hello rate %s, want a person's 3/5", rateOf(hello))
	}
}

// A service is a member like a user: it sends, reacts and reads over the
// same frames, and the members see all of it.
func TestServiceSendsReactsReads(t *testing.T) {
	e := mustEnv(t)
	chat := e.mustGroup(t, "alice", "echobot")
	alice, _ := e.dial(t, "alice", "phone")
	bot, _ := e.dialHello(t, mustServiceToken(t, "echobot", ""))

	alice.sendJSON(sendFrame(chat, "a1", "hello bot"))
	hello := alice.nextOf("accepted")
	got := bot.nextOf("msg")
	if got["id"] != hello["id"] || got["from"] != "alice" {
		t.Fatalf("bot got %v, want alice's message %v", got, hello["id"])
	}
	bot.sendJSON(map[string]any{"type": "ack", "ids": []string{got["id"].(string)}})

	bot.sendJSON(sendFrame(chat, "b1", "echo: hello bot"))
	if a := bot.nextOf("accepted"); a["seq"] != 2.0 {
		t.Fatalf("bot's send: %v, want seq 2", a)
	}
	if m := alice.nextOf("msg"); m["from"] != "echobot" || m["body"] != "echo: hello bot" || m["seq"] != 2.0 {
		t.Fatalf("alice got %v, want the bot's echo at seq 2", m)
	}

	bot.sendJSON(map[string]any{"type": "react", "chat": chat, "cid": "b2", "target": hello["id"], "emoji": "👍", "on": true})
	bot.nextOf("accepted")
	if m := alice.nextOf("msg"); m["kind"] != "reaction" || m["from"] != "echobot" || m["target"] != hello["id"] {
		t.Fatalf("alice got %v, want the bot's reaction to her message", m)
	}

	bot.sendJSON(map[string]any{"type": "read", "chat": chat, "upto": hello["id"]})
	if r := alice.nextOf("receipt"); r["user"] != "echobot" || r["seq"] != 1.0 {
		t.Fatalf("alice got %v, want echobot's receipt at seq 1", r)
	}
	msgs := e.history(t, "alice", chat)
	if len(msgs) != 3 || msgs[0].Reactions["👍"][0] != "echobot" {
		t.Fatalf("history %+v, want 3 events and the bot's reaction on the first", msgs)
	}
}

// A service's token buckets are its own: over WebSocket and REST it goes on
// where a person with the same per-connection and REST budgets is refused.
func TestServiceRateLimitSeparateFromUsers(t *testing.T) {
	e := mustEnv(t, func(c *api.Config) {
		c.Limits.RatePerSecond, c.Limits.RateBurst = 1, 2
		c.REST.RatePerSecond, c.REST.Burst = 1, 2
		c.Service.RatePerSecond, c.Service.Burst = 1, 30
	})
	chat := e.mustGroup(t, "alice", "echobot")
	alice, _ := e.dial(t, "alice", "phone")
	for i := range 3 {
		alice.sendJSON(sendFrame(chat, fmt.Sprintf("a%d", i), "x"))
	}
	// The refusal comes at once, the acceptances after their commit.
	answers := map[string]int{}
	for range 3 {
		f := alice.next()
		answers[fmt.Sprint(f["type"], " ", f["code"])]++
	}
	if answers["accepted <nil>"] != 2 || answers["rejected rate_limited"] != 1 {
		t.Fatalf("alice's three sends were answered %v, want 2 accepted and 1 rejected rate_limited", answers)
	}

	bot, _ := e.dialHello(t, mustServiceToken(t, "echobot", ""))
	for i := range 10 {
		bot.sendJSON(sendFrame(chat, fmt.Sprintf("b%d", i), "x"))
	}
	for i := range 10 {
		if f := bot.next(); f["type"] != "accepted" {
			t.Fatalf("bot's send %d: %v, want accepted", i, f)
		}
	}

	// REST: alice's bucket (burst 2) was not touched by the WebSocket; a
	// third call is over it, while the service makes ten.
	e.mustCall(t, 200, "bob", "GET", "/api/chats", nil)
	e.mustCall(t, 200, "bob", "GET", "/api/chats", nil)
	if got, out, _ := e.call(t, "bob", "GET", "/api/chats", nil); got != 429 {
		t.Fatalf("bob's third REST call: %d %v, want 429", got, out)
	}
	svc := mustServiceToken(t, "echobot", "")
	for i := range 10 {
		body := map[string]any{"cid": fmt.Sprintf("r%d", i), "body": "x"}
		if got, out, _ := e.callToken(t, svc, "POST", "/api/chats/"+chat+"/messages", body); got != 201 {
			t.Fatalf("service REST send %d: %d %v, want 201", i, got, out)
		}
	}
}

// A bot that restarts resumes from its own read position: the chat list
// gives its read_seq, history after it gives exactly what came since, and
// nothing it read is handed out again.
func TestServiceResumesFromReadPosition(t *testing.T) {
	e := mustEnv(t)
	chat := e.mustGroup(t, "alice", "echobot")
	post := func(cid string) string {
		t.Helper()
		return e.mustCall(t, 201, "alice", "POST", "/api/chats/"+chat+"/messages", map[string]any{"cid": cid, "body": cid})["id"].(string)
	}
	post("m1")
	m2 := post("m2")
	svc := mustServiceToken(t, "echobot", "")

	bot, _ := e.dialHello(t, svc)
	bot.sendJSON(map[string]any{"type": "read", "chat": chat, "upto": m2})
	readSeq := func() float64 {
		_, out, _ := e.callToken(t, svc, "GET", "/api/chats", nil)
		return out["chats"].([]any)[0].(map[string]any)["read_seq"].(float64)
	}
	for deadline := time.Now().Add(5 * time.Second); readSeq() != 2; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the bot's read_seq is %v, want 2", readSeq())
		}
	}
	bot.conn.Close() // the bot stops

	post("m3")
	post("m4")

	// The bot starts again: its position, then what came after it.
	after := readSeq()
	_, page, _ := e.callToken(t, svc, "GET", fmt.Sprintf("/api/chats/%s/messages?after_seq=%d", chat, int64(after)), nil)
	var got []string
	for _, m := range page["messages"].([]any) {
		got = append(got, m.(map[string]any)["body"].(string))
	}
	if fmt.Sprint(got) != "[m3 m4]" || page["next"] != nil {
		t.Fatalf("after a restart the bot got %v (next %v), want [m3 m4] and no more", got, page["next"])
	}
}
