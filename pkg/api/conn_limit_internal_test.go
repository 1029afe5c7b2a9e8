package api

import (
	"errors"
	"log/slog"
	"net"
	"os"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
)

// flakyListener fails its first accepts the way a process out of file
// descriptors does, then accepts for real.
type flakyListener struct {
	net.Listener
	fails int
}

func (f *flakyListener) Accept() (net.Conn, error) {
	if f.fails > 0 {
		f.fails--
		return nil, &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", syscall.EMFILE)}
	}
	return f.Listener.Accept()
}

// Running out of file descriptors is waited out, not returned: fasthttp
// stops serving on an accept error, and chatd then shut down entirely
// ("api serve: accept tcp …: accept4: too many open files", seen with
// 10,000 group members and the HTTP connections of their history reads).
func TestAcceptWaitsOutRunningOutOfFileDescriptors(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	m := newMetrics(nil)
	ll := newLimitListener(&flakyListener{Listener: ln, fails: 3}, 10, 5*time.Second, time.Now, m, slog.New(slog.DiscardHandler))
	type result struct {
		c   net.Conn
		err error
	}
	got := make(chan result, 1)
	go func() {
		c, err := ll.Accept()
		got <- result{c, err}
	}()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	select {
	case r := <-got:
		if r.err != nil {
			t.Fatalf("Accept returned %v: the server would stop serving", r.err)
		}
		r.c.Close()
	case <-time.After(5 * time.Second):
		t.Fatal("Accept did not return the connection after the errors passed")
	}
	var retries dto.Metric
	if err := m.httpAcceptRetries.Write(&retries); err != nil {
		t.Fatal(err)
	}
	if n := retries.GetCounter().GetValue(); n != 3 {
		t.Fatalf("chatd_http_accept_retries_total = %v, want 3", n)
	}

	// Any other error still ends Accept (a closed listener ends serving).
	ln2, _ := net.Listen("tcp", "127.0.0.1:0")
	ln2.Close()
	ll2 := newLimitListener(ln2, 10, time.Second, time.Now, newMetrics(nil), slog.New(slog.DiscardHandler))
	if _, err := ll2.Accept(); err == nil || !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Accept on a closed listener: got %v, want net.ErrClosed", err)
	}
}

// A close before the listener's wait lingers and is waited for; a close
// after it closes at once, so no lingering close outlives Serve (counting
// one after the wait began raced with it: the race detector flagged a
// WaitGroup Add after its Wait, from a worker closing a connection while
// Serve returned).
func TestCloseAfterWaitDoesNotLinger(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ll := newLimitListener(ln, 100, 5*time.Second, time.Now, newMetrics(nil), slog.New(slog.DiscardHandler))
	const n = 20
	conns := make([]net.Conn, 0, n)
	for range n {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		sc, err := ll.Accept()
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, sc)
	}
	// The first half lingers: their clients stay silent.
	for _, c := range conns[:n/2] {
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	ll.wait()
	if waited := time.Since(start); waited < lingerFor/2 {
		t.Fatalf("wait returned after %v, before the lingering closes' %v", waited, lingerFor)
	}
	if open := ll.open.Load(); open != n/2 {
		t.Fatalf("%d connections counted open after wait, want the %d not closed yet", open, n/2)
	}
	for _, c := range conns[n/2:] {
		_ = c.Close()
	}
	if open := ll.open.Load(); open != 0 {
		t.Fatalf("%d connections still counted open right after their close, after wait: want none lingering", open)
	}
}

// closeCounting counts the accepted connections and those the server side
// closed without half-closing them first: at once, not lingering.
type closeCounting struct {
	net.Listener
	accepted, atOnce atomic.Int64
}

type countedConn struct {
	*net.TCPConn
	l          *closeCounting
	halfClosed atomic.Bool
}

func (c *countedConn) CloseWrite() error {
	c.halfClosed.Store(true)
	return c.TCPConn.CloseWrite()
}

func (c *countedConn) Close() error {
	if !c.halfClosed.Load() {
		c.l.atOnce.Add(1)
	}
	return c.TCPConn.Close()
}

func (l *closeCounting) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.accepted.Add(1)
	return &countedConn{TCPConn: c.(*net.TCPConn), l: l}, nil
}

// Refused connections linger at most maxLingeringRefusals at once: each
// holds a file descriptor beyond the cap, so past the bound a refusal
// closes at once.
func TestLingeringRefusalsAreBounded(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	counting := &closeCounting{Listener: ln}
	ll := newLimitListener(counting, 0, 5*time.Second, time.Now, newMetrics(nil), slog.New(slog.DiscardHandler))
	// The clients stay silent, so the lingering closes last until they
	// close.
	ll.lingerFor = time.Minute
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = ll.Accept() // refuses every connection until ln closes
	}()
	const over = 20
	clients := make([]net.Conn, 0, maxLingeringRefusals+over)
	for range maxLingeringRefusals + over {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		clients = append(clients, c)
	}
	for deadline := time.Now().Add(10 * time.Second); counting.accepted.Load() < int64(len(clients)) && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	ln.Close()
	<-done
	if n := counting.atOnce.Load(); n != over {
		t.Fatalf("%d of %d refused connections closed at once, want the %d past the bound of %d lingering",
			n, counting.accepted.Load(), over, maxLingeringRefusals)
	}
	for _, c := range clients {
		_ = c.Close()
	}
	ll.wait()
	if n := ll.refusalsLingering.Load(); n != 0 {
		t.Fatalf("%d refusals counted lingering after every client closed, want 0", n)
	}
}
