package e2e_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chatd/chatd/internal/testpg"
	"github.com/chatd/chatd/internal/testwait"
	"github.com/chatd/chatd/pkg/api/apitest"
	"github.com/chatd/chatd/pkg/node"
	"github.com/fasthttp/websocket"
)

// Shutdown flips /readyz to 503 first, while ingest still accepts, so a
// load balancer stops sending new sockets before anything drains. The
// shutdown delay holds that state long enough to observe it without racing.
func TestReadyzFailsBeforeIngestStops(t *testing.T) {
	ns := mustNATS(t, t.TempDir(), "127.0.0.1:0")
	rn := mustRunNode(t, nodeConfig(testpg.NewDatabase(t), ns.ClientURL(), "n1", node.Config{ShutdownDelay: 3 * time.Second}))
	alice := mustPeer(t, rn.URL(), "alice", "", nil)
	chat := alice.mustDirect(t, "bob")

	ws := "ws" + strings.TrimPrefix(rn.URL(), "http") + "/ws?token=" + apitest.Token(t, []byte(testSecret), "alice", "raw")
	conn, _, err := websocket.DefaultDialer.Dial(ws, nil)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer conn.Close()
	read := func() map[string]any {
		t.Helper()
		for {
			_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
			var m map[string]any
			if err := conn.ReadJSON(&m); err != nil {
				t.Fatalf("read frame: %v (want the socket still served after /readyz failed)", err)
			}
			if m["type"] != "presence" && m["type"] != "typing" {
				return m
			}
		}
	}
	if m := read(); m["type"] != "hello" {
		t.Fatalf("first frame %v, want hello", m)
	}
	if code := readyz(t, rn.URL()); code != http.StatusOK {
		t.Fatalf("/readyz before shutdown: %d, want 200", code)
	}

	stopped := make(chan error, 1)
	go func() { stopped <- rn.stop(t) }()
	testwait.For(t, 5*time.Second, "/readyz answers 503 after shutdown begins", func() bool {
		return readyz(t, rn.URL()) == http.StatusServiceUnavailable
	})
	// Ingest still takes sends on a socket that was already open.
	if err := conn.WriteJSON(map[string]any{"type": "send", "chat": chat, "cid": "after-unready", "body": "hi"}); err != nil {
		t.Fatalf("send after /readyz failed: %v", err)
	}
	if m := read(); m["type"] != "accepted" {
		t.Fatalf("answer to a send after /readyz failed: %v, want accepted", m)
	}
	if err := <-stopped; err != nil {
		t.Fatalf("node run: %v", err)
	}
}

// readyz returns /readyz's status, or 0 when it does not answer.
func readyz(t *testing.T, url string) int {
	t.Helper()
	c := http.Client{Timeout: time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get(url + "/readyz")
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}
