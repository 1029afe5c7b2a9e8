package api_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/chatd/chatd/pkg/api/apitest"
)

// A request to /ws that is not a usable WebSocket handshake is answered as
// RFC 6455 and RFC 9110 ask, with the document's JSON error naming what is
// wrong: 426 with the Upgrade header for a plain GET, and 400 with
// Sec-WebSocket-Version: 13 for a handshake the library refuses (another
// version, no key). Every upgrade failure was answered 426 "Upgrade
// Required", without either header.
func TestBadHandshakeIsAnsweredAsTheRFCsSay(t *testing.T) {
	t.Parallel()
	e := mustEnv(t)
	url := e.ws + "?token=" + apitest.Token(t, testSecret, "alice", "")
	upgrade := func(version, key string) http.Header {
		h := http.Header{"Upgrade": {"websocket"}, "Connection": {"Upgrade"}, "Sec-Websocket-Version": {version}}
		if key != "" {
			h.Set("Sec-Websocket-Key", key)
		}
		return h
	}
	for _, tt := range []struct {
		name        string
		header      http.Header
		status      int
		wantHeader  [2]string
		errorNaming string
	}{
		{"not an upgrade", http.Header{}, 426, [2]string{"Upgrade", "websocket"}, "upgrade"},
		{"version 8", upgrade("8", "dGhlIHNhbXBsZSBub25jZQ=="), 400, [2]string{"Sec-Websocket-Version", "13"}, "version"},
		{"no key", upgrade("13", ""), 400, [2]string{"Sec-Websocket-Version", "13"}, "Sec-WebSocket-Key"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequest("GET", "http"+strings.TrimPrefix(url, "ws"), nil)
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range tt.header {
				req.Header[k] = v
			}
			resp, err := checkedClient(t).Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d (%s), want %d", resp.StatusCode, body, tt.status)
			}
			if got := resp.Header.Get(tt.wantHeader[0]); got != tt.wantHeader[1] {
				t.Fatalf("%s: %q, want %q", tt.wantHeader[0], got, tt.wantHeader[1])
			}
			var e struct{ Error, Code string }
			if err := json.Unmarshal(body, &e); err != nil || e.Code != "invalid" || !strings.Contains(e.Error, tt.errorNaming) {
				t.Fatalf("body %s: want the JSON error, code invalid, naming %q", body, tt.errorNaming)
			}
		})
	}
}
