package api_test

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/chatd/chatd/pkg/api/apitest"
)

// A client frame that arrives alone costs the server one read of its
// socket: the session reads when the network poller reports bytes, not
// again straight after to find the socket empty (ws_read_socket.go). The
// client here is a blocking socket of its own, outside Go's poller, that
// sends a ping and reads the pong, 200 times: one read by the client and
// one by the server a round, where a server that reads until the socket is
// empty makes three. The reads are the process's (/proc/self/io), so the
// bound leaves room for the rest of the server's.
func TestOneSocketReadPerFrame(t *testing.T) {
	if _, err := readSyscalls(); err != nil {
		t.Skipf("no read counts for this process: %v", err)
	}
	fd, _ := upgradeBlocking(t, mustEnv(t))

	frame := maskedFrame(0x81, []byte(`{"type":"ping"}`))
	pong := []byte("\x81\x0f" + `{"type":"pong"}`)
	buf := make([]byte, 256)
	const rounds = 200
	before, _ := readSyscalls()
	for range rounds {
		// A pause lets the server's reader find the socket empty and wait,
		// as between a real client's frames; sent at once, a frame is often
		// in before the reader looks again.
		// The client sleeps in the kernel: a Go timer would wake the
		// runtime's poller, which reads to clear it.
		pause := syscall.NsecToTimespec((2 * time.Millisecond).Nanoseconds())
		_ = syscall.Nanosleep(&pause, nil)
		writeAll(t, fd, frame)
		n, err := syscall.Read(fd, buf)
		for err == syscall.EINTR {
			n, err = syscall.Read(fd, buf)
		}
		if err != nil || !bytes.Equal(buf[:n], pong) {
			t.Fatalf("read %q, %v: want the pong frame %q", buf[:max(n, 0)], err, pong)
		}
	}
	after, _ := readSyscalls()
	perRound := float64(after-before) / rounds
	t.Logf("%d reads by the process in %d rounds: %.2f a round", after-before, rounds, perRound)
	if perRound > 2.5 {
		t.Errorf("%.2f reads a round, want about 2 (the client's and the server's): the server reads its socket more than once a frame", perRound)
	}
}

// Frames cut into single bytes, each its own write, a text message in two
// fragments with a ping between them: the session answers the ping, then
// the message, as if each had come whole.
func TestFramesReadByteByByte(t *testing.T) {
	fd, br := upgradeBlocking(t, mustEnv(t))
	var stream []byte
	stream = append(stream, maskedFrame(0x01, []byte(`{"type":`))...)
	stream = append(stream, maskedFrame(0x89, []byte("hb"))...)
	stream = append(stream, maskedFrame(0x80, []byte(`"ping"}`))...)
	for i := range stream {
		writeAll(t, fd, stream[i:i+1])
	}
	if b0, p := readAnyServerFrame(t, br); b0 != 0x8a || string(p) != "hb" {
		t.Fatalf("got frame %#x %q, want the pong of the ping (0x8a \"hb\")", b0, p)
	}
	if b0, p := readAnyServerFrame(t, br); b0 != 0x81 || !jsonTypeIs(p, "pong") {
		t.Fatalf("got frame %#x %q, want the pong of the fragmented message", b0, p)
	}
}

// A frame that breaks RFC 6455 (here unmasked) is answered with a close
// 1002 that names the fault, and the socket is closed.
func TestFrameBreakingTheProtocolClosesWith1002(t *testing.T) {
	fd, br := upgradeBlocking(t, mustEnv(t))
	writeAll(t, fd, []byte("\x81\x0f"+`{"type":"ping"}`))
	b0, p := readAnyServerFrame(t, br)
	if b0 != 0x88 || len(p) < 2 || binary.BigEndian.Uint16(p) != 1002 || string(p[2:]) != "bad MASK" {
		t.Fatalf("got frame %#x %q, want a close 1002 \"bad MASK\"", b0, p)
	}
	if n, err := br.Read(make([]byte, 1)); n != 0 || err == nil {
		t.Fatalf("read %d bytes, %v after the close: want the socket closed", n, err)
	}
}

// upgradeBlocking upgrades a blocking socket of its own (dialBlocking) for
// alice and reads up to `hello`, a byte at a time so that nothing after it
// is taken; br reads the socket from there.
func upgradeBlocking(t *testing.T, e *env) (int, *bufio.Reader) {
	t.Helper()
	fd := dialBlocking(t, e.addr())
	writeAll(t, fd, []byte(upgradeRequest(t, e, "alice")))
	br := bufio.NewReaderSize(fdReader{fd}, 16)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("got status %d, want 101", resp.StatusCode)
	}
	if got := readServerFrame(t, br); !jsonTypeIs(got, "hello") {
		t.Fatalf("got frame %s, want hello", got)
	}
	if br.Buffered() > 0 {
		t.Fatalf("%d bytes past hello", br.Buffered())
	}
	return fd, br
}

// upgradeRequest is a WebSocket upgrade request for user, written by hand
// for tests that control every byte on the socket.
func upgradeRequest(t *testing.T, e *env, user string) string {
	return "GET /ws?token=" + apitest.Token(t, testSecret, user, "") + " HTTP/1.1\r\nHost: " + e.addr() +
		"\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n" +
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"
}

// maskedFrame is a client frame with header byte b0 and a short payload.
func maskedFrame(b0 byte, payload []byte) []byte {
	key := []byte{1, 2, 3, 4}
	f := append([]byte{b0, 0x80 | byte(len(payload))}, key...)
	for i, c := range payload {
		f = append(f, c^key[i%4])
	}
	return f
}

// readAnyServerFrame reads one short unmasked server frame: its first
// header byte and its payload.
func readAnyServerFrame(t *testing.T, r *bufio.Reader) (byte, []byte) {
	t.Helper()
	var h [2]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		t.Fatal(err)
	}
	if h[1] > 125 {
		t.Fatalf("frame header %x: want a short unmasked frame", h)
	}
	p := make([]byte, h[1])
	if _, err := io.ReadFull(r, p); err != nil {
		t.Fatal(err)
	}
	return h[0], p
}

// readSyscalls is the process's count of read system calls so far.
func readSyscalls() (int64, error) {
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return 0, err
	}
	for line := range bytes.Lines(b) {
		if v, ok := bytes.CutPrefix(line, []byte("syscr: ")); ok {
			return strconv.ParseInt(string(bytes.TrimSpace(v)), 10, 64)
		}
	}
	return 0, os.ErrNotExist
}

// dialBlocking connects a blocking TCP socket to addr, outside Go's poller.
func dialBlocking(t *testing.T, addr string) int {
	t.Helper()
	ta, err := net.ResolveTCPAddr("tcp4", addr)
	if err != nil {
		t.Fatal(err)
	}
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Close(fd) })
	sa := &syscall.SockaddrInet4{Port: ta.Port}
	copy(sa.Addr[:], ta.IP.To4())
	if err := syscall.Connect(fd, sa); err != nil {
		t.Fatal(err)
	}
	tv := syscall.NsecToTimeval((10 * time.Second).Nanoseconds())
	if err := syscall.SetsockoptTimeval(fd, syscall.SOL_SOCKET, syscall.SO_RCVTIMEO, &tv); err != nil {
		t.Fatal(err)
	}
	return fd
}

func writeAll(t *testing.T, fd int, b []byte) {
	t.Helper()
	for len(b) > 0 {
		n, err := syscall.Write(fd, b)
		if err != nil {
			t.Fatal(err)
		}
		b = b[n:]
	}
}

// fdReader reads a blocking socket a byte at a time.
type fdReader struct{ fd int }

func (r fdReader) Read(p []byte) (int, error) {
	n, err := syscall.Read(r.fd, p[:1])
	if err != nil {
		return 0, err
	}
	if n == 0 {
		return 0, net.ErrClosed
	}
	return n, nil
}
