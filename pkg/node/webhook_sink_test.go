package node_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/chatd/chatd/pkg/webhook"
)

// testWhsec signs the webhook tests' requests.
const testWhsec = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// testWhsecKey is testWhsec's key, for checking signatures.
func testWhsecKey(t *testing.T) []byte {
	t.Helper()
	key, err := webhook.ParseSecret(testWhsec)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

// serveEndpoint serves h as a webhook endpoint until the test ends and
// returns its URL.
func serveEndpoint(t *testing.T, h http.Handler) string {
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

// readSigned reads a webhook request's id and body, failing t when its
// signature is not the one key makes.
func readSigned(t *testing.T, key []byte, r *http.Request) (id string, body []byte) {
	body, _ = io.ReadAll(r.Body)
	id, ts := r.Header.Get("webhook-id"), r.Header.Get("webhook-timestamp")
	var sec int64
	fmt.Sscan(ts, &sec) //nolint:errcheck // a bad timestamp fails the signature below
	if want := webhook.Sign(key, id, sec, body); r.Header.Get("webhook-signature") != want {
		t.Errorf("request %s: signature %q, want %q", id, r.Header.Get("webhook-signature"), want)
	}
	return id, body
}
