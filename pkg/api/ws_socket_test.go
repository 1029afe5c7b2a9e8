package api_test

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/chatd/chatd/pkg/api"
	"github.com/fasthttp/websocket"
	"github.com/prometheus/client_golang/prometheus"
)

// Once a session ends, the server closes its TCP connection and frees its
// slot under MaxConnections, whether the server chose to close (here 4400)
// or the client went away without a close frame.
func TestWSSocketClosedWhenSessionEnds(t *testing.T) {
	reg := prometheus.NewRegistry()
	e := mustEnv(t, func(c *api.Config) { c.Registry = reg; c.Abuse.Wait = -1 })

	c, _ := e.dial(t, "alice", "")
	_ = c.conn.WriteMessage(websocket.TextMessage, []byte("not JSON"))
	c.wantClose(4400)
	// The client does not close; the server must, after its handshake wait.
	start := time.Now()
	_ = c.conn.NetConn().SetReadDeadline(start.Add(5 * time.Second))
	_, err := io.Copy(io.Discard, c.conn.NetConn())
	if errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("socket still open %v after the close frame, want it closed", time.Since(start))
	}
	waitMetric(t, reg, "chatd_http_connections", 0)

	c, _ = e.dial(t, "alice", "")
	waitMetric(t, reg, "chatd_http_connections", 1)
	c.conn.NetConn().Close()
	waitMetric(t, reg, "chatd_http_connections", 0)
	waitMetric(t, reg, "chatd_ws_connections", 0)
}

// A frame the client sends in the same packet as its upgrade request (so
// it sits in the HTTP server's read buffer at the upgrade) is read, not
// lost: the session answers its ping. The session keeps reading its own
// socket after other connections took buffers from the HTTP server's pools
// (the buffer that held the early frame must not go back to a pool).
func TestWSFrameBufferedWithUpgradeIsRead(t *testing.T) {
	e := mustEnv(t)
	conn, err := net.Dial("tcp", e.addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	req := upgradeRequest(t, e, "alice")
	frame := maskedFrame(0x81, []byte(`{"type":"ping"}`))
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := conn.Write(append([]byte(req), frame...)); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("got status %d, want 101", resp.StatusCode)
	}
	for _, want := range []string{"hello", "pong"} {
		if got := readServerFrame(t, br); !jsonTypeIs(got, want) {
			t.Fatalf("got frame %s, want type %q", got, want)
		}
	}
	for i := range 4 {
		c, _ := e.dial(t, "bob", "d"+strconv.Itoa(i))
		c.sendJSON(map[string]any{"type": "ping"})
		c.nextOf("pong")
	}
	if _, err := conn.Write(frame); err != nil {
		t.Fatal(err)
	}
	if got := readServerFrame(t, br); !jsonTypeIs(got, "pong") {
		t.Fatalf("got frame %s after other connections, want type pong", got)
	}
}

// readServerFrame reads one unmasked, unfragmented server text frame.
func readServerFrame(t *testing.T, r *bufio.Reader) []byte {
	t.Helper()
	var h [2]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		t.Fatal(err)
	}
	n := int(h[1] & 0x7f)
	switch n {
	case 126:
		var b [2]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			t.Fatal(err)
		}
		n = int(binary.BigEndian.Uint16(b[:]))
	case 127:
		t.Fatal("unexpectedly large server frame")
	}
	p := make([]byte, n)
	if _, err := io.ReadFull(r, p); err != nil {
		t.Fatal(err)
	}
	if h[0] != 0x81 {
		t.Fatalf("frame header %#x, want a final text frame", h[0])
	}
	return p
}

func jsonTypeIs(frame []byte, typ string) bool {
	var m map[string]any
	return json.Unmarshal(frame, &m) == nil && m["type"] == typ
}
