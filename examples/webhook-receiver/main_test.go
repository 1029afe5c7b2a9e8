package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/chatd/chatd/pkg/webhook"
)

const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// The receiver accepts what chatd's signer signs, once per webhook-id, and
// refuses a tampered body, a wrong secret and a stale timestamp.
func TestReceiverVerifiesChatdSignatures(t *testing.T) {
	v, err := NewVerifier(secret)
	if err != nil {
		t.Fatal(err)
	}
	var got []Event
	srv := httptest.NewServer(&Handler{Verifier: v, Handle: func(_ string, e Event) { got = append(got, e) }})
	t.Cleanup(srv.Close)
	key, err := webhook.ParseSecret(secret)
	if err != nil {
		t.Fatal(err)
	}
	body := []byte(`{"type":"chat.message","timestamp":"2026-12-03T12:00:00Z","data":{"kind":"message","chat_id":"c1","seq":1,"recipients":["a","b"],"event":{"id":"m1","from":"a","body":"hi"}}}`)
	send := func(body []byte, id string, ts int64, sig string) int {
		req, _ := http.NewRequest(http.MethodPost, srv.URL, bytes.NewReader(body))
		req.Header.Set("webhook-id", id)
		req.Header.Set("webhook-timestamp", strconv.FormatInt(ts, 10))
		req.Header.Set("webhook-signature", sig)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	now := time.Now().Unix()
	other, _ := webhook.ParseSecret("whsec_c2Vjb25kIHNlY3JldCBvZiAyNCBieXRlcw==")
	tampered := bytes.Replace(body, []byte("hi"), []byte("ho"), 1)
	for _, tc := range []struct {
		name string
		body []byte
		ts   int64
		sig  string
		want int
	}{
		{"signed by chatd", body, now, webhook.Sign(key, "msg_m1_x", now, body), 204},
		{"duplicate", body, now, webhook.Sign(key, "msg_m1_x", now, body), 204},
		{"rotation: two signatures", body, now, "v1,bm9wZQ== " + webhook.Sign(key, "msg_m1_x", now, body), 204},
		{"tampered body", tampered, now, webhook.Sign(key, "msg_m1_x", now, body), 401},
		{"other secret", body, now, webhook.Sign(other, "msg_m1_x", now, body), 401},
		{"stale", body, now - 3600, webhook.Sign(key, "msg_m1_x", now-3600, body), 401},
	} {
		if code := send(tc.body, "msg_m1_x", tc.ts, tc.sig); code != tc.want {
			t.Errorf("%s: got %d, want %d", tc.name, code, tc.want)
		}
	}
	if len(got) != 1 || got[0].Data.ChatID != "c1" || got[0].Data.Event.Body != "hi" {
		t.Fatalf("handled: got %+v, want the one event once", got)
	}
	if s := got[0].String(); s != "chat.message chat=c1 seq=1 from=a: hi" {
		t.Errorf("printed %q", s)
	}
}

// A notification prints as the push an app server would send.
func TestReceiverPrintsANotificationAsAPush(t *testing.T) {
	var e Event
	body := `{"type":"chat.notify","timestamp":"2026-12-03T12:00:00Z","data":{"id":"ntf_m1_x","user":"bob","chat_id":"c1",` +
		`"message_id":"m3","seq":3,"sender":"alice","text":"hi","count":3,"unread":3,"unread_total":5,"ts":"2026-12-03T12:00:00Z"}}`
	if err := json.Unmarshal([]byte(body), &e); err != nil {
		t.Fatal(err)
	}
	if s, want := e.String(), `push to bob: title="alice" body="hi" badge=5 collapse=c1 (3 new)`; s != want {
		t.Fatalf("printed %q, want %q", s, want)
	}
}

// A member change and a read print as what changed.
func TestReceiverPrintsChatChanges(t *testing.T) {
	for _, tc := range []struct{ body, want string }{
		{`{"type":"chat.member","timestamp":"2026-12-03T12:00:00Z","data":{"id":7,"kind":"member","chat_id":"c1","change":"added","users":["carol"],"by":"alice","ts":"2026-12-03T12:00:00Z"}}`,
			`chat c1: added carol by "alice"`},
		{`{"type":"chat.read","timestamp":"2026-12-03T12:00:00Z","data":{"id":8,"kind":"read","chat_id":"c1","users":["bob"],"seq":3,"upto":"m3","ts":"2026-12-03T12:00:00Z"}}`,
			`chat c1: bob read up to seq 3 (m3)`},
	} {
		var e Event
		if err := json.Unmarshal([]byte(tc.body), &e); err != nil {
			t.Fatal(err)
		}
		if s := e.String(); s != tc.want {
			t.Errorf("printed %q, want %q", s, tc.want)
		}
	}
}
