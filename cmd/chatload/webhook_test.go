package main

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/chatd/chatd/internal/testport"
	"github.com/chatd/chatd/pkg/node"
	"github.com/chatd/chatd/pkg/webhook"
)

func TestParseHookSpec(t *testing.T) {
	a1, a2 := "127.0.0.1:9101", "127.0.0.1:9102" // parsed, never listened on
	tests := []struct {
		name    string
		in      string
		want    hookSpec
		wantErr bool
	}{
		{name: "address only", in: "127.0.0.1:9101", want: hookSpec{Addr: a1, Down: downRefuse}},
		{name: "every fault", in: "127.0.0.1:9102,fail-pct=10,down-at=10s,down-for=20s,down=503",
			want: hookSpec{Addr: a2, FailPct: 10, DownAt: 10 * time.Second, DownFor: 20 * time.Second, Down: down503}},
		{name: "no port", in: "127.0.0.1", wantErr: true},
		{name: "not key=value", in: "127.0.0.1:1,fail", wantErr: true},
		{name: "unknown key", in: "127.0.0.1:1,slow=1s", wantErr: true},
		{name: "percentage over 100", in: "127.0.0.1:1,fail-pct=150", wantErr: true},
		{name: "bad duration", in: "127.0.0.1:1,down-for=20", wantErr: true},
		{name: "bad down mode", in: "127.0.0.1:1,down=drop", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseHookSpec(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("got error %v, want error %v", err, tt.wantErr)
			}
			if !tt.wantErr && got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

// The receiver's check is written from the specification; chatd's signer
// must pass it, and anything else must not.
func TestVerifyHookAgainstChatdsSigner(t *testing.T) {
	key, other := []byte("0123456789abcdef0123456789abcdef"), []byte("fedcba9876543210fedcba9876543210")
	now := time.Unix(1_800_000_000, 0)
	body := []byte(`{"type":"chat.message"}`)
	hdr := func(id string, ts int64, sig string) http.Header {
		h := http.Header{}
		h.Set("webhook-id", id)
		h.Set("webhook-timestamp", strconv.FormatInt(ts, 10))
		h.Set("webhook-signature", sig)
		return h
	}
	ts := now.Unix()
	tests := []struct {
		name string
		h    http.Header
		body []byte
		ok   bool
	}{
		{name: "signed by chatd", h: hdr("msg_1", ts, webhook.Sign(key, "msg_1", ts, body)), body: body, ok: true},
		{name: "one of several signatures", h: hdr("msg_1", ts, "v1,AAAA "+webhook.Sign(key, "msg_1", ts, body)), body: body, ok: true},
		{name: "4 min old", h: hdr("msg_1", ts-240, webhook.Sign(key, "msg_1", ts-240, body)), body: body, ok: true},
		{name: "another key", h: hdr("msg_1", ts, webhook.Sign(other, "msg_1", ts, body)), body: body},
		{name: "another body", h: hdr("msg_1", ts, webhook.Sign(key, "msg_1", ts, body)), body: []byte(`{}`)},
		{name: "another id", h: hdr("msg_2", ts, webhook.Sign(key, "msg_1", ts, body)), body: body},
		{name: "6 min old", h: hdr("msg_1", ts-360, webhook.Sign(key, "msg_1", ts-360, body)), body: body},
		{name: "6 min ahead", h: hdr("msg_1", ts+360, webhook.Sign(key, "msg_1", ts+360, body)), body: body},
		{name: "not v1", h: hdr("msg_1", ts, "v2"+webhook.Sign(key, "msg_1", ts, body)[2:]), body: body},
		{name: "no signature", h: hdr("msg_1", ts, ""), body: body},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, why := verifyHook(key, tt.h.Get("webhook-id"), tt.h.Get("webhook-timestamp"), tt.h.Get("webhook-signature"), tt.body, now)
			if (why == "") != tt.ok {
				t.Fatalf("got refusal %q, want accepted %v", why, tt.ok)
			}
			if tt.ok && (c.webhookID != "msg_1" || c.body != sha256.Sum256(tt.body)) {
				t.Errorf("got copy %+v, want webhook-id msg_1 and the body's hash", c)
			}
		})
	}
}

func TestCheckHookCopies(t *testing.T) {
	stopped := time.Unix(1000, 0)
	want := []expectedEvent{{"a", 1, "a1"}, {"a", 2, "a2"}, {"b", 1, "b1"}}
	at := func(s int) time.Time { return stopped.Add(time.Duration(s) * time.Second) }
	cp := func(id, chat string, seq int64, ev string, body byte, s int) hookCopy {
		return hookCopy{webhookID: id, chat: chat, seq: seq, eventID: ev, body: [32]byte{body}, at: at(s)}
	}
	a1, a2, b1 := cp("w_a1", "a", 1, "a1", 1, -2), cp("w_a2", "a", 2, "a2", 2, 3), cp("w_b1", "b", 1, "b1", 3, -1)
	ours := func(chat string) bool { return chat != "z" }
	tests := []struct {
		name   string
		copies []hookCopy
		check  func(r WebhookReport) bool
		pass   bool
	}{
		{name: "all in order", copies: []hookCopy{a1, b1, a2}, pass: true,
			check: func(r WebhookReport) bool { return r.Received == 3 && r.Complete && r.CompleteS == 3 }},
		{name: "a duplicate with the same id and body", copies: []hookCopy{a1, b1, a2, a1}, pass: true,
			check: func(r WebhookReport) bool { return r.Duplicates == 1 && r.Received == 3 && r.Copies == 4 }},
		{name: "a duplicate under another id", copies: []hookCopy{a1, b1, a2, cp("w_x", "a", 1, "a1", 1, 4)},
			check: func(r WebhookReport) bool { return r.DuplicateMismatches == 1 && r.Received == 4 }},
		{name: "a duplicate with another body", copies: []hookCopy{a1, b1, a2, cp("w_a1", "a", 1, "a1", 9, 4)},
			check: func(r WebhookReport) bool { return r.DuplicateMismatches == 1 }},
		{name: "out of order", copies: []hookCopy{a2, a1, b1},
			check: func(r WebhookReport) bool { return r.OrderViolations == 1 && r.Lost == 0 }},
		{name: "a late duplicate is not out of order", copies: []hookCopy{a1, a2, a1, b1}, pass: true,
			check: func(r WebhookReport) bool { return r.OrderViolations == 0 && r.Duplicates == 1 }},
		{name: "lost", copies: []hookCopy{a1, b1},
			check: func(r WebhookReport) bool { return r.Lost == 1 && !r.Complete }},
		{name: "another event at an accepted seq", copies: []hookCopy{a1, b1, cp("w_a2", "a", 2, "zz", 2, 0)},
			check: func(r WebhookReport) bool { return r.Mismatched == 1 }},
		{name: "foreign and unexpected ones are counted, not failed", copies: []hookCopy{a1, cp("w_z", "z", 1, "z1", 5, 0), b1, a2, cp("w_a3", "a", 3, "a3", 6, 0)},
			pass: true, check: func(r WebhookReport) bool { return r.Foreign == 1 && r.Unexpected == 1 && r.Copies == 4 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := checkHookCopies(tt.copies, want, ours, stopped)
			if r.Pass != tt.pass || !tt.check(r) {
				t.Errorf("got %+v, want pass %v and the case's counts", r, tt.pass)
			}
		})
	}
}

// TestSmokeWebhooks runs pairs against an embedded chatd posting to three
// receivers: a healthy one, one that fails a fifth of its requests and
// refuses connections for 2 s, and one that answers 503 for 2 s. Each
// must end with every accepted event, in per-chat order.
func TestSmokeWebhooks(t *testing.T) {
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		t.Fatal(err)
	}
	secret := "whsec_" + base64.StdEncoding.EncodeToString(key)
	ports := testport.Free(t, 3)
	addr := func(i int) string { return "127.0.0.1:" + strconv.Itoa(ports[i]) }
	cfg := Config{Scenario: scenarioPairs, Clients: 20, Rate: 100, Duration: 4 * time.Second, WebhookSecret: secret,
		WebhookReceivers: []string{addr(0), addr(1) + ",fail-pct=20,down-at=1s,down-for=2s", addr(2) + ",down-at=1s,down-for=2s,down=503"},
		WebhookWait:      30 * time.Second,
		tuneNode: func(c *node.Config) {
			for i := range ports {
				c.Webhook.Endpoints = append(c.Webhook.Endpoints, webhook.Endpoint{URL: "http://" + addr(i) + "/hook", Secret: secret})
			}
			c.Webhook.MinBackoff, c.Webhook.MaxBackoff = 20*time.Millisecond, 200*time.Millisecond
			c.Webhook.MaxAttempts = 1000
		}}
	rep := mustRun(t, cfg)
	if len(rep.Webhooks) != 3 {
		t.Fatalf("got %d webhook reports, want 3", len(rep.Webhooks))
	}
	for i, w := range rep.Webhooks {
		if !w.Pass || w.Expected != rep.Accepted || w.Received < w.Expected || w.SignatureFailures != 0 {
			t.Errorf("receiver %d: got %+v, want a pass with all %d accepted events", i, w, rep.Accepted)
		}
	}
	if w := rep.Webhooks[1]; w.Injected == 0 || w.DownAtS == 0 || w.UpAtS <= w.DownAtS {
		t.Errorf("failing receiver: got %d injected failures, outage %.1f–%.1f s; want some, and an outage", w.Injected, w.DownAtS, w.UpAtS)
	}
	if w := rep.Webhooks[2]; w.DownAnswers == 0 {
		t.Errorf("503 receiver: got 0 answers while down, want some")
	}
}

func TestDecodeHook(t *testing.T) {
	tests := []struct {
		name     string
		body     string
		wantKind string
		ok       bool
	}{
		{name: "a message", body: `{"type":"chat.message","data":{"chat_id":"c","seq":3,"event":{"id":"m","chat":"c","seq":3}}}`, wantKind: "chat.message", ok: true},
		{name: "a notification", body: `{"type":"chat.notify","data":{"id":"ntf_1","user":"bob","chat_id":"c","seq":3}}`, wantKind: notifyType, ok: true},
		{name: "a notification without its chat", body: `{"type":"chat.notify","data":{"id":"ntf_1"}}`},
		{name: "a member change", body: `{"type":"chat.member","data":{"id":4,"kind":"member","chat_id":"c","change":"created","users":["a","b"]}}`, wantKind: memberType, ok: true},
		{name: "a read position", body: `{"type":"chat.read","data":{"id":5,"kind":"read","chat_id":"c","users":["a"],"seq":2,"upto":"m2"}}`, wantKind: readType, ok: true},
		{name: "a member change without its chat", body: `{"type":"chat.member","data":{"id":4}}`},
		{name: "seq disagrees", body: `{"type":"chat.message","data":{"chat_id":"c","seq":4,"event":{"id":"m","chat":"c","seq":3}}}`},
		{name: "not JSON", body: `{`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, why := decodeHook(hookCopy{webhookID: "w"}, []byte(tt.body))
			if (why == "") != tt.ok || (tt.ok && c.kind != tt.wantKind) {
				t.Errorf("got kind %q, refusal %q; want kind %q, accepted %v", c.kind, why, tt.wantKind, tt.ok)
			}
		})
	}
}
