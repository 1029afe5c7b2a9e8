package api

import (
	"errors"
	"io"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// refusal is the whole answer to a connection over the cap (refuse): the
// request is not parsed, so it costs no worker and no request buffer. A
// client takes it for the answer to the call it sent, so it is that call's
// 503 as documented: the JSON error with Retry-After.
var refusal = func() []byte {
	body := `{"error":"too many connections; retry","code":"unavailable"}`
	return []byte("HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nContent-Type: application/json\r\n" +
		"Retry-After: 1\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body)
}()

// refusalWriteTimeout bounds writing the refusal, so a peer that does not
// read cannot stall the accept loop or hold a lingering refusal.
const refusalWriteTimeout = 100 * time.Millisecond

// refusalReadWait is how long a refusal waits for its request to begin
// (refuse): a client sends it as soon as it is connected, so this is
// a round trip's margin, not a read timeout.
const refusalReadWait = 250 * time.Millisecond

// limitListener caps the open connections of a listener. It counts every
// accepted connection until it is closed, upgraded WebSockets included
// (fasthttp's own Concurrency counts only connections in its worker pool,
// which a hijacked WebSocket leaves). Over the cap it answers 503 and
// closes, rather than blocking Accept: the kernel's backlog would then
// hold clients silently. Safe for concurrent use.
type limitListener struct {
	net.Listener
	max int64
	// readTimeout bounds a connection's first request from accept (see
	// limitedConn.firstBy).
	readTimeout time.Duration
	open        atomic.Int64
	metrics     *metrics
	log         *slog.Logger
	// now is Config.Now, for the warnings' rate limits (socket deadlines
	// are the network poller's, on the wall clock).
	now func() time.Time
	// lastWarn rate-limits the refusal log to one a minute (unix nanos).
	lastWarn atomic.Int64
	// lastFDWarn does the same for running out of file descriptors.
	lastFDWarn atomic.Int64
	// lingering counts the closes still reading what their peer sends
	// (limitedConn.Close); wait waits for them. Once waited is set (under
	// lingerMu) no close lingers, so none is counted after Wait began.
	lingerMu  sync.Mutex
	waited    bool
	lingering sync.WaitGroup
	// refusalsLingering counts the refusals answered on a goroutine
	// (refuse).
	refusalsLingering atomic.Int64
	// lingerFor is how long a close lingers at most: the constant
	// lingerFor, longer in tests that need closes to be still lingering.
	lingerFor time.Duration
}

// Accept's wait after an error a later accept can get past (out of file
// descriptors, a connection aborted before it was taken), doubling up to
// the max, as net/http's server does. Returning the error would stop the
// server: fasthttp treats it as the end of serving.
const (
	acceptRetryMin = 5 * time.Millisecond
	acceptRetryMax = time.Second
)

// retryableAccept reports an accept error that passes: the process or the
// system is out of file descriptors until connections close, or the peer
// gave up before the connection was taken.
func retryableAccept(err error) bool {
	return errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) ||
		errors.Is(err, syscall.ENOBUFS) || errors.Is(err, syscall.ENOMEM) ||
		errors.Is(err, syscall.ECONNABORTED)
}

func newLimitListener(ln net.Listener, maxConns int, readTimeout time.Duration, now func() time.Time, m *metrics, log *slog.Logger) *limitListener {
	return &limitListener{Listener: ln, max: int64(maxConns), readTimeout: readTimeout, now: now, metrics: m, log: log, lingerFor: lingerFor}
}

// Accept returns the next connection under the cap, refusing those over it.
func (l *limitListener) Accept() (net.Conn, error) {
	var wait time.Duration
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			if !retryableAccept(err) {
				return nil, err
			}
			wait = min(max(2*wait, acceptRetryMin), acceptRetryMax)
			l.warnAcceptRetry(err, wait)
			time.Sleep(wait)
			continue
		}
		wait = 0
		if n := l.open.Add(1); n > l.max {
			l.open.Add(-1)
			l.refuse(c)
			continue
		}
		l.metrics.httpConns.Inc()
		by := deadline(l.readTimeout)
		if err := c.SetReadDeadline(by); err != nil {
			l.release()
			_ = c.Close()
			continue
		}
		lc := &limitedConn{Conn: c, l: l}
		lc.firstBy.Store(by.UnixNano())
		return lc, nil
	}
}

// refuse answers a connection over the cap with the 503 and closes it.
// Up to maxLingeringRefusals at once are answered on a goroutine of the
// listener's, once their request has begun, and closed lingering
// (limitedConn.Close): a client then reads the 503 as the answer to the
// request it sent, body and all. Each holds a file descriptor beyond
// --max-connections for at most refusalReadWait and lingerFor, so past
// the bound a refusal is written at once from the accept loop and the
// connection closed, which a client still sending may see as a reset.
func (l *limitListener) refuse(c net.Conn) {
	l.metrics.httpRefused.Inc()
	now := l.now().UnixNano()
	if last := l.lastWarn.Load(); now-last > int64(time.Minute) && l.lastWarn.CompareAndSwap(last, now) {
		l.log.Warn("refusing connections: --max-connections are open; raise it (and the open-file limit) or add nodes",
			"max_connections", l.max)
	}
	if l.refusalsLingering.Add(1) <= maxLingeringRefusals && l.linger() {
		go func() {
			defer l.lingering.Done()
			defer l.refusalsLingering.Add(-1)
			// Go's HTTP client fails a call whose answer came before its
			// request was written ("unsolicited response on idle
			// channel"), so the answer waits for the request's first bytes.
			_ = c.SetReadDeadline(time.Now().Add(refusalReadWait))
			var first [512]byte
			_, _ = c.Read(first[:])
			_ = c.SetWriteDeadline(deadline(refusalWriteTimeout))
			_, _ = c.Write(refusal)
			l.drainAndClose(c)
		}()
		return
	}
	l.refusalsLingering.Add(-1)
	_ = c.SetWriteDeadline(deadline(refusalWriteTimeout))
	_, _ = c.Write(refusal)
	_ = c.Close()
}

func (l *limitListener) warnAcceptRetry(err error, wait time.Duration) {
	l.metrics.httpAcceptRetries.Inc()
	now := l.now().UnixNano()
	if last := l.lastFDWarn.Load(); now-last > int64(time.Minute) && l.lastFDWarn.CompareAndSwap(last, now) {
		l.log.Warn("accepting connections failed; retrying: if out of file descriptors, raise the open-file limit (systemd LimitNOFILE, ulimit -n) above --max-connections plus the connections to PostgreSQL and NATS, or lower --max-connections",
			"err", err, "retry_in", wait, "max_connections", l.max)
	}
}

// wait returns once every connection closed so far is closed for good;
// connections closed after it began close at once.
func (l *limitListener) wait() {
	l.lingerMu.Lock()
	l.waited = true
	l.lingerMu.Unlock()
	l.lingering.Wait()
}

// linger counts one more lingering close, or reports false once wait began.
func (l *limitListener) linger() bool {
	l.lingerMu.Lock()
	defer l.lingerMu.Unlock()
	if l.waited {
		return false
	}
	l.lingering.Add(1)
	return true
}

func (l *limitListener) release() {
	l.open.Add(-1)
	l.metrics.httpConns.Dec()
}

// limitedConn gives its slot back on the first Close, and keeps the first
// request within ReadTimeout of accept. With ReduceMemoryUsage (see New)
// fasthttp waits for a connection's first byte with no deadline and sets
// ReadTimeout only once that byte is in; so Accept sets the deadline, and
// fasthttp's first SetReadDeadline may not move it later.
type limitedConn struct {
	net.Conn
	l    *limitListener
	once sync.Once
	// firstBy is the first request's deadline (unix nanos) until the first
	// SetReadDeadline consumes it; then 0.
	firstBy atomic.Int64
	// upgraded: the connection became a WebSocket, which is closed after
	// its close handshake (and from other goroutines than its reader), so
	// it needs no lingering close.
	upgraded atomic.Bool
}

// Bounds of a lingering close (limitedConn.Close): how long and how much
// it reads of what the peer still sends.
const (
	lingerFor   = 500 * time.Millisecond
	lingerBytes = 4 << 20
	// maxLingeringRefusals bounds the refused connections answered on a
	// goroutine at once (refuse).
	maxLingeringRefusals = 256
)

// SetReadDeadline is net.Conn's, except that the first call cannot extend
// the deadline set at accept.
func (c *limitedConn) SetReadDeadline(t time.Time) error {
	if by := c.firstBy.Swap(0); by != 0 && (t.IsZero() || t.UnixNano() > by) {
		t = time.Unix(0, by)
	}
	return c.Conn.SetReadDeadline(t)
}

// Close closes an HTTP connection lingering, as web servers do: it sends
// what is written and a FIN, then reads what the peer still sends, for at
// most lingerFor and lingerBytes, on a goroutine of the listener's, before
// the socket is closed. A socket closed with request bytes unread (a body
// refused before it was read, with 413) is reset by the kernel, and the
// reset makes the client drop the answer it has not read yet. A WebSocket
// is closed at once.
func (c *limitedConn) Close() error {
	err := net.ErrClosed
	c.once.Do(func() {
		if !c.upgraded.Load() && c.l.closeLingering(c.Conn, c.l.release) {
			err = nil
			return
		}
		err = c.Conn.Close()
		c.l.release()
	})
	return err
}

// closeLingering closes c lingering on a goroutine of the listener's
// (drainAndClose) and calls done once the socket is closed. It reports
// false, having closed nothing, once the listener's wait began.
func (l *limitListener) closeLingering(c net.Conn, done func()) bool {
	if !l.linger() {
		return false
	}
	go func() {
		defer l.lingering.Done()
		l.drainAndClose(c)
		done()
	}()
	return true
}

// drainAndClose sends c's FIN after what is written, reads what the peer
// still sends for at most l.lingerFor and lingerBytes, and closes c.
func (l *limitListener) drainAndClose(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok && cw.CloseWrite() == nil &&
		c.SetReadDeadline(time.Now().Add(l.lingerFor)) == nil {
		_, _ = io.CopyN(io.Discard, c, lingerBytes)
	}
	_ = c.Close()
}

// markUpgraded records that c, as the server passed it to a handler,
// becomes a WebSocket.
func markUpgraded(c net.Conn) {
	if lc, ok := c.(*limitedConn); ok {
		lc.upgraded.Store(true)
	}
}
