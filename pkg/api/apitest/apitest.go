// Package apitest holds the helpers that tests of chatd's HTTP API share,
// whichever package they are in: a token for a user, a JSON call. It sits
// below pkg/api as net/http/httptest sits below net/http.
package apitest

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chatd/chatd/pkg/api"
)

// Token is an hour's token for user and device (empty: the default
// device), signed with secret; it fails t if one cannot be issued.
func Token(t testing.TB, secret []byte, user, device string) string {
	t.Helper()
	tok, err := api.IssueToken(secret, user, device, time.Hour)
	if err != nil {
		t.Fatalf("issue token: %v", err)
	}
	return tok
}

// PostJSON posts body to url with tok as its bearer token, fails t unless
// the answer is a 2xx, and decodes the answer into into (unless nil).
func PostJSON(t testing.TB, url, tok, body string, into any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		t.Fatalf("POST %s: %s %s", url, resp.Status, b)
	}
	if into != nil {
		if err := json.Unmarshal(b, into); err != nil {
			t.Fatalf("POST %s: %v: %s", url, err, b)
		}
	}
}
