package api

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fasthttp/websocket"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// countingConn counts the Write calls made on a server-side socket.
type countingConn struct {
	net.Conn
	writes *atomic.Int64
}

func (c countingConn) Write(b []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(b)
}

type countingListener struct {
	net.Listener
	writes *atomic.Int64
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return countingConn{c, l.writes}, nil
}

// writePair is a session on the server end of a real WebSocket whose socket
// writes are counted, and a library client on the other end to read what
// the session wrote.
type writePair struct {
	s      *session
	client *websocket.Conn
	writes *atomic.Int64 // socket writes by the server after the handshake
}

func newWritePair(t testing.TB) *writePair {
	t.Helper()
	return newWritePairWith(t, &Config{OutboundQueue: 100, WriteTimeout: 5 * time.Second}, true)
}

// newWritePairWith is newWritePair with cfg; with counted false the
// session's socket is the TCP connection itself, so it writes inline
// (ws_write_inline.go), and writes stays 0.
func newWritePairWith(t testing.TB, cfg *Config, counted bool) *writePair {
	t.Helper()
	writes := new(atomic.Int64)
	serverConn := make(chan *websocket.Conn, 1)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		up := websocket.Upgrader{}
		c, err := up.Upgrade(w, r, nil)
		if err != nil {
			t.Errorf("upgrade: %v", err)
			return
		}
		serverConn <- c
	}))
	if counted {
		srv.Listener = countingListener{srv.Listener, writes}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	client, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	conn := <-serverConn
	t.Cleanup(func() { _ = conn.Close() })
	writes.Store(0) // the handshake's response
	g := &gateway{cfg: cfg, metrics: newMetrics(nil), srv: &Server{log: slog.New(slog.DiscardHandler)}}
	return &writePair{s: newSession(g, conn, Identity{User: "u1", Device: "d1"}), client: client, writes: writes}
}

// read reads n frames from the client side and fails unless they are want,
// in order, as text frames.
func (p *writePair) read(t *testing.T, want [][]byte) {
	t.Helper()
	_ = p.client.SetReadDeadline(time.Now().Add(5 * time.Second))
	for i, w := range want {
		typ, got, err := p.client.ReadMessage()
		if err != nil {
			t.Fatalf("frame %d of %d: %v", i+1, len(want), err)
		}
		if typ != websocket.TextMessage || !bytes.Equal(got, w) {
			t.Fatalf("frame %d: type %d, %d bytes %.20q..., want a text frame of %d bytes %.20q...", i+1, typ, len(got), got, len(w), w)
		}
	}
}

// counterValue reads a counter's value.
func counterValue(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

func payloads(sizes ...int) [][]byte {
	out := make([][]byte, len(sizes))
	for i, n := range sizes {
		out[i] = bytes.Repeat([]byte{byte('a' + i%26)}, n)
	}
	return out
}

func framesOf(data [][]byte) []outFrame {
	out := make([]outFrame, len(data))
	for i, d := range data {
		out[i] = outFrame{data: d, kind: "accepted"}
	}
	return out
}

// Every payload length class of RFC 6455's framing (7-bit, 16-bit and 64-bit
// lengths, and their edges) must come out as frames a real client reads back
// byte for byte, here all framed into one buffer and written at once.
func TestAppendTextFrameReadsBackThroughTheLibrary(t *testing.T) {
	p := newWritePair(t)
	want := payloads(0, 1, 125, 126, 127, 0xffff, 0x10000, 70000)
	var buf []byte
	for _, d := range want {
		buf = appendTextFrame(buf, d)
	}
	if _, err := p.s.conn.NetConn().Write(buf); err != nil {
		t.Fatal(err)
	}
	p.read(t, want)
}

// The writer must send the frames it finds queued in one socket write (the
// point of ws_write.go), and count each as out.
func TestWriterSendsQueuedFramesInOneWrite(t *testing.T) {
	p := newWritePair(t)
	want := payloads(30, 200, 90, 1000, 5, 64, 300, 12, 700, 40)
	// The queue starts with the writer role held (as before hello), so
	// every frame is queued before the writer runs.
	for _, f := range framesOf(want) {
		if ok, _ := p.s.out.push(f); !ok {
			t.Fatal("queue refused a frame")
		}
	}
	if p.s.out.release() {
		p.s.startWriter()
	}
	p.read(t, want)
	p.s.out.writers.Wait()
	if got := p.writes.Load(); got != 1 {
		t.Errorf("socket writes for %d queued frames: got %d, want 1", len(want), got)
	}
	if got := counterValue(t, p.s.g.metrics.wsWrites); got != 1 {
		t.Errorf("chatd_ws_writes_total = %v, want 1", got)
	}
	if got := counterValue(t, p.s.g.metrics.framesOut.vec.WithLabelValues("accepted")); got != float64(len(want)) {
		t.Errorf(`chatd_ws_frames_out_total{type="accepted"} = %v, want %d`, got, len(want))
	}
}

// A write stops growing at coalesceLimit: three 12 KiB frames go out as two
// writes (two frames, then one), in order; a frame bigger than the limit
// goes out whole in a write of its own.
func TestWriterSplitsWritesAtTheCoalesceLimit(t *testing.T) {
	for _, tc := range []struct {
		name   string
		sizes  []int
		writes int64
	}{
		{"three of 12 KiB", []int{12 << 10, 12 << 10, 12 << 10}, 2},
		{"small, one over the limit, small", []int{100, coalesceLimit + 1, 100}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newWritePair(t)
			want := payloads(tc.sizes...)
			done := make(chan error, 1)
			go func() { done <- p.s.writeFrames(framesOf(want), time.Now().Add(5*time.Second)) }()
			p.read(t, want)
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if got := p.writes.Load(); got != tc.writes {
				t.Errorf("socket writes: got %d, want %d", got, tc.writes)
			}
		})
	}
}

// No data frame may follow a close frame on the socket (RFC 6455 5.5.1).
// The library kept that for its own writes; the writer's socket writes
// bypass it, so a client's close, answered by the reader, must stop them.
func TestNoDataFrameAfterTheCloseFrame(t *testing.T) {
	cfg := &Config{OutboundQueue: 100, WriteTimeout: 5 * time.Second}
	cfg.Limits.IdleTimeout, cfg.Limits.MaxFrameBytes = 5*time.Second, 1024
	p := newWritePairWith(t, cfg, true)
	if err := p.client.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(5*time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := p.s.readFrames(); !websocket.IsCloseError(err, websocket.CloseNormalClosure) {
		t.Fatalf("server read: got %v, want the client's close", err)
	}
	err := p.s.writeFrames(framesOf(payloads(10, 20)), time.Now().Add(5*time.Second))
	if !errors.Is(err, websocket.ErrCloseSent) {
		t.Errorf("data write after the close reply: got %v, want ErrCloseSent", err)
	}
	if got := p.writes.Load(); got != 1 {
		t.Errorf("socket writes after the client's close: got %d, want 1 (the close reply)", got)
	}
	_ = p.client.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, _, err := p.client.NextReader(); !websocket.IsCloseError(err, websocket.CloseNormalClosure) {
		t.Errorf("client read: got %v, want the server's close reply (1000)", err)
	}
}

// BenchmarkWriteFrames is the writer's cost per frame through a real socket
// when a wake finds 1, 2 or 8 frames of a typical msg frame's size queued
// (under load a wake often finds more than one). The write system call is
// most of the cost of one frame, so ns/frame falls steeply as frames per wake
// grow; if frames=8 costs near frames=1 per frame, the writes stopped
// coalescing.
func BenchmarkWriteFrames(b *testing.B) {
	for _, perWake := range []int{1, 2, 8} {
		b.Run(fmt.Sprintf("frames=%d", perWake), func(b *testing.B) {
			p := newWritePair(b)
			drained := make(chan struct{})
			go func() {
				defer close(drained)
				_, _ = io.Copy(io.Discard, p.client.NetConn())
			}()
			frames := make([]outFrame, perWake)
			for i := range frames {
				frames[i] = outFrame{data: bytes.Repeat([]byte("m"), 180), kind: "msg"}
			}
			b.ReportAllocs()
			for b.Loop() { // times only the loop: setup before, teardown after
				if err := p.s.writeFrames(frames, time.Now().Add(5*time.Second)); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*perWake), "ns/frame")
			_ = p.client.Close()
			<-drained
		})
	}
}
