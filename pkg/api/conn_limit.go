package api

import (
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// refusal is the whole answer to a connection over the cap: written
// without reading the request, so it costs no goroutine and no buffer.
var refusal = []byte("HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nContent-Type: text/plain\r\nContent-Length: 29\r\n\r\ntoo many connections; retry\n")

// refusalWriteTimeout bounds writing the refusal from the accept loop, so a
// peer that does not read cannot stall accepting.
const refusalWriteTimeout = 100 * time.Millisecond

// limitListener caps the open connections of a listener. It counts every
// accepted connection until it is closed, upgraded WebSockets included
// (fasthttp's own Concurrency counts only connections in its worker pool,
// which a hijacked WebSocket leaves). Over the cap it answers 503 and
// closes, rather than blocking Accept: the kernel's backlog would then
// hold clients silently. Safe for concurrent use.
type limitListener struct {
	net.Listener
	max     int64
	open    atomic.Int64
	metrics *metrics
	log     *slog.Logger
	// lastWarn rate-limits the refusal log to one a minute (unix nanos).
	lastWarn atomic.Int64
}

func newLimitListener(ln net.Listener, maxConns int, m *metrics, log *slog.Logger) *limitListener {
	return &limitListener{Listener: ln, max: int64(maxConns), metrics: m, log: log}
}

// Accept returns the next connection under the cap, refusing those over it.
func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if n := l.open.Add(1); n > l.max {
			l.open.Add(-1)
			l.refuse(c)
			continue
		}
		l.metrics.httpConns.Inc()
		return &limitedConn{Conn: c, l: l}, nil
	}
}

func (l *limitListener) refuse(c net.Conn) {
	l.metrics.httpRefused.Inc()
	_ = c.SetWriteDeadline(time.Now().Add(refusalWriteTimeout))
	_, _ = c.Write(refusal)
	_ = c.Close()
	now := time.Now().UnixNano()
	if last := l.lastWarn.Load(); now-last > int64(time.Minute) && l.lastWarn.CompareAndSwap(last, now) {
		l.log.Warn("refusing connections: --max-connections are open; raise it (and the open-file limit) or add nodes",
			"max_connections", l.max)
	}
}

func (l *limitListener) release() {
	l.open.Add(-1)
	l.metrics.httpConns.Dec()
}

// limitedConn gives its slot back on the first Close.
type limitedConn struct {
	net.Conn
	l    *limitListener
	once sync.Once
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.l.release)
	return err
}
