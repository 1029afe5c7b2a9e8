package api_test

import (
	"bufio"
	"bytes"
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
	e := mustEnv(t)
	fd := dialBlocking(t, e.addr())
	req := "GET /ws?token=" + apitest.Token(t, testSecret, "alice", "") + " HTTP/1.1\r\nHost: " + e.addr() +
		"\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n" +
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"
	writeAll(t, fd, []byte(req))
	// The 101 and hello, read a byte at a time so nothing after them is taken.
	br := bufio.NewReaderSize(fdReader{t, fd}, 16)
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

	payload := []byte(`{"type":"ping"}`)
	frame := append([]byte{0x81, 0x80 | byte(len(payload)), 1, 2, 3, 4}, payload...)
	for i := range payload {
		frame[6+i] ^= []byte{1, 2, 3, 4}[i%4]
	}
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
type fdReader struct {
	t  *testing.T
	fd int
}

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
