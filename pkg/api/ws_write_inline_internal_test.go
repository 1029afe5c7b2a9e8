package api

import (
	"bytes"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/fasthttp/websocket"
)

// inlinePair is a write pair whose session writes inline, with a write
// timeout no test waits out: a write that waited for the client would hang
// the test instead of passing. Both ends' socket buffers are small (64 KiB),
// so a client that does not read fills them after a few frames on any
// machine.
func inlinePair(t *testing.T, queue int) *writePair {
	t.Helper()
	p := newWritePairWith(t, &Config{OutboundQueue: queue, WriteTimeout: time.Hour}, false)
	if p.s.raw == nil {
		t.Fatal("the session over a TCP connection has no raw socket to write inline")
	}
	server, client := p.s.conn.NetConn().(*net.TCPConn), p.client.NetConn().(*net.TCPConn)
	if err := errors.Join(server.SetWriteBuffer(socketBuffer), client.SetReadBuffer(socketBuffer)); err != nil {
		t.Fatal(err)
	}
	if p.s.out.release() {
		t.Fatal("release: the new queue has frames or is closed")
	}
	return p
}

// socketBuffer is the inline pairs' socket buffer size on each end.
const socketBuffer = 64 << 10

// A frame queued while no writer runs is on the socket when enqueue
// returns: the goroutine that queued it wrote it, no writer goroutine did.
func TestEnqueueWritesTheFrameItself(t *testing.T) {
	p := inlinePair(t, 100)
	want := payloads(40)
	if !p.s.enqueue(framesOf(want)[0]) {
		t.Fatal("queue refused a frame")
	}
	if got := counterValue(t, p.s.g.metrics.wsWrites); got != 1 {
		t.Errorf("chatd_ws_writes_total when enqueue returned = %v, want 1 (written by the enqueuer)", got)
	}
	p.read(t, want)
	p.s.out.writers.Wait()
}

// A client that reads nothing must never hold up the goroutine that queues
// its frames (a commit's worker, the push relay): once its socket buffer is
// full, enqueue still returns, the rest waits in the queue and in a writer
// goroutine, and when the client reads it gets every frame whole and in
// order, and the frames are counted out.
func TestEnqueueNeverWaitsForAClientThatDoesNotRead(t *testing.T) {
	const n = 200           // 3.2 MiB: far more than the socket buffers hold
	p := inlinePair(t, 2*n) // room for all, past the part reserved for answers
	want := make([][]byte, n)
	for i := range want {
		want[i] = bytes.Repeat([]byte{byte('a' + i%26)}, 16<<10)
	}
	done := make(chan int, 1)
	go func() {
		queued := 0
		for _, f := range framesOf(want) {
			if p.s.enqueue(f) {
				queued++
			}
		}
		done <- queued
	}()
	select {
	case queued := <-done:
		if queued != n {
			t.Fatalf("queued %d of %d frames, want all (the queue holds %d)", queued, n, 2*n)
		}
	case <-time.After(time.Minute):
		t.Fatal("enqueue did not return while the client read nothing: it waited for the socket")
	}
	p.read(t, want)
	p.s.out.writers.Wait()
	if got := counterValue(t, p.s.g.metrics.framesOut.vec.WithLabelValues("accepted")); got != n {
		t.Errorf(`chatd_ws_frames_out_total{type="accepted"} = %v, want %d`, got, n)
	}
}

// A write that never waits can end inside a frame. Pings, pongs and close
// frames go out between data writes, so they must wait for the rest of that
// frame: the client then reads the whole frame, then the ping, then the
// close, and no bytes of one inside another.
func TestControlFramesFollowAFrameBegunInline(t *testing.T) {
	p := inlinePair(t, 100)
	big := bytes.Repeat([]byte("x"), 4<<20) // far more than the socket buffers take
	// The test takes the writer role itself, and writes as writeNow would,
	// with no writer goroutine to take the rest over.
	if _, start := p.s.out.push(outFrame{data: big, kind: "msg"}); !start {
		t.Fatal("push gave the idle queue's writer role to no one")
	}
	defer p.s.out.writers.Done()
	batch, _ := p.s.out.next(nil)
	rest, whole, err := p.s.writeInline(batch)
	if err != nil || whole || len(rest) != 0 {
		t.Fatalf("inline write of 4 MiB: rest %d, whole %v, err %v; want the frame begun and left in part", len(rest), whole, err)
	}
	if p.s.tail == nil {
		t.Fatal("inline write of 4 MiB left no tail: the socket took nothing or everything")
	}
	wrote := make(chan error, 1)
	go func() {
		at := time.Now().Add(time.Minute)
		if err := p.s.writeControl(websocket.PingMessage, []byte("p1"), at); err != nil {
			wrote <- err
			return
		}
		wrote <- p.s.writeCloseFrame(websocket.FormatCloseMessage(websocket.CloseGoingAway, "bye"), at)
	}()
	pinged := ""
	p.client.SetPingHandler(func(data string) error { pinged = data; return nil })
	_ = p.client.SetReadDeadline(time.Now().Add(time.Minute))
	typ, got, err := p.client.ReadMessage()
	if err != nil || typ != websocket.TextMessage || !bytes.Equal(got, big) {
		t.Fatalf("client read: type %d, %d bytes, err %v; want the 4 MiB text frame whole", typ, len(got), err)
	}
	if _, _, err := p.client.NextReader(); !websocket.IsCloseError(err, websocket.CloseGoingAway) {
		t.Errorf("after the frame: got %v, want the ping, then the close (1001)", err)
	}
	if pinged != "p1" {
		t.Errorf("ping payload read by the client: %q, want %q", pinged, "p1")
	}
	if err := <-wrote; err != nil {
		t.Errorf("ping or close write: %v", err)
	}
	if got := counterValue(t, p.s.g.metrics.framesOut.vec.WithLabelValues("msg")); got != 1 {
		t.Errorf(`chatd_ws_frames_out_total{type="msg"} = %v, want 1 once its tail is out`, got)
	}
}
