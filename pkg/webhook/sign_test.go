package webhook_test

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chatd/chatd/pkg/webhook"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// While a secret is rotated an endpoint signs with the new and the old one:
// the specification's Go library verifies the header with either and
// refuses it with any other.
func TestSignWithEverySecretWhileRotating(t *testing.T) {
	const newSecret, oldSecret, otherSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
		"whsec_c2Vjb25kIHNlY3JldCBvZiAyNCBieXRlcw==", "whsec_dGhpcmQgc2VjcmV0IG9mIDI0IGJ5dGVzIQ=="
	keys, err := webhook.ParseSecrets(newSecret + " " + oldSecret)
	if err != nil {
		t.Fatal(err)
	}
	id, ts, body := "msg_1", time.Now().Unix(), []byte(`{"type":"chat.message"}`)
	sig := string(webhook.NewSigner(keys...).AppendSignature(nil, id, ts, body))
	if want := webhook.Sign(keys[0], id, ts, body) + " " + webhook.Sign(keys[1], id, ts, body); sig != want {
		t.Fatalf("signature %q, want %q", sig, want)
	}
	h := http.Header{}
	h.Set("webhook-id", id)
	h.Set("webhook-timestamp", strconv.FormatInt(ts, 10))
	h.Set("webhook-signature", sig)
	for _, s := range []string{newSecret, oldSecret} {
		wh, err := standardwebhooks.NewWebhook(s)
		if err != nil {
			t.Fatal(err)
		}
		if err := wh.Verify(body, h); err != nil {
			t.Errorf("verify with %s: %v", s[:12], err)
		}
	}
	wh, _ := standardwebhooks.NewWebhook(otherSecret)
	if err := wh.Verify(body, h); !errors.Is(err, standardwebhooks.ErrNoMatchingSignature) {
		t.Errorf("verify with a secret the endpoint does not have: %v, want ErrNoMatchingSignature", err)
	}
}

// Secrets are separated by spaces or commas (a list in the config file
// arrives comma-joined); a bad one is named by its place.
func TestParseSecrets(t *testing.T) {
	const a, b = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "whsec_c2Vjb25kIHNlY3JldCBvZiAyNCBieXRlcw=="
	for _, tc := range []struct {
		in   string
		keys int
		err  string
	}{
		{a, 1, ""},
		{a + " " + b, 2, ""},
		{a + "," + b, 2, ""},
		{" " + a + " ,\t" + b + "\n", 2, ""},
		{"", 0, "no secret"},
		{a + " " + a + " " + a + " " + b, 0, "at most 3"},
		{a + " whsec_nope!", 0, "secret 2 of 2: the secret after whsec_ is not standard base64"},
		{"MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", 0, "must be whsec_"},
	} {
		keys, err := webhook.ParseSecrets(tc.in)
		switch {
		case tc.err == "" && (err != nil || len(keys) != tc.keys):
			t.Errorf("%q: %d keys, %v; want %d keys", tc.in, len(keys), err, tc.keys)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%q: %v, want an error with %q", tc.in, err, tc.err)
		}
	}
}
