package api_test

import (
	"encoding/json"
	"io"
	"net/http"
	"testing"
)

// A request whose method no route knows (not even to answer 405) gets 501
// and the JSON error body every other answer carries, so a client or proxy
// that reads errors as documented can read this one too.
func TestUnknownMethodGetsJSONError(t *testing.T) {
	t.Parallel()
	e := mustEnv(t)
	for _, path := range []string{"/api/chats", "/healthz", "/no/such/path"} {
		req, err := http.NewRequest("FROB", e.base+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		var body struct{ Error, Code string }
		if resp.StatusCode != http.StatusNotImplemented || json.Unmarshal(raw, &body) != nil || body.Code != "invalid" || body.Error == "" {
			t.Fatalf("FROB %s: %d %q (Content-Type %q), want 501 with a JSON error of code invalid",
				path, resp.StatusCode, raw, resp.Header.Get("Content-Type"))
		}
		t.Logf("FROB %s: %d %s", path, resp.StatusCode, raw)
	}
}
