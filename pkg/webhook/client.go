package webhook

import (
	"context"
	"errors"
	"io"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/valyala/fasthttp"
)

// maxResponseBody is how much of an answer's body is read: receivers have
// nothing to tell chatd in it, and an endpoint must not make chatd buffer
// an unbounded one.
const maxResponseBody = 64 << 10

// errClientClosed: the client's context ended, so it dials no more.
var errClientClosed = errors.New("webhook client closed")

// client posts to one endpoint over fasthttp, whose client costs a
// fraction of net/http's CPU per request (BENCHMARKS.md, "Webhook post on
// its own"). It keeps a
// connection per worker between posts. fasthttp knows no contexts, so the
// client is bound to one: when it ends, every connection the client dialled
// is closed, which abandons the posts in flight at once, and it dials no
// more. Safe for concurrent use; call close when done.
type client struct {
	hc     *fasthttp.HostClient
	ctx    context.Context
	unbind func() bool
	dialer net.Dialer

	mu     sync.Mutex
	conns  map[*trackedConn]struct{} // open connections dialled by hc
	closed bool
}

// newClient returns a client for the endpoint at rawURL that keeps up to
// conns connections open, bound to ctx. Redirects are not followed
// (fasthttp's Do never does): a 3xx is a failed attempt, since following it
// would turn the POST into a GET or send the signed event somewhere not
// configured. Requests do not go through HTTP(S)_PROXY (docs/integrations.md).
func newClient(ctx context.Context, cfg *Config, rawURL string, conns int) *client {
	u, _ := url.Parse(rawURL) // checked by Config.setDefaults
	tls := u.Scheme == "https"
	c := &client{ctx: ctx, conns: map[*trackedConn]struct{}{}}
	c.hc = &fasthttp.HostClient{
		Addr:        fasthttp.AddMissingPort(u.Host, tls),
		IsTLS:       tls, // a nil TLSConfig verifies against the system roots
		DialTimeout: c.dial,
		MaxConns:    conns,
		// Never ErrNoFreeConns: a post waits for a connection, within Timeout.
		MaxConnWaitTimeout:  cfg.Timeout,
		MaxResponseBodySize: maxResponseBody,
		// A POST is not idempotent: fasthttp retries none by itself, and
		// do retries only on a stale connection.
		NoDefaultUserAgentHeader: true,
	}
	c.unbind = context.AfterFunc(ctx, c.abort)
	return c
}

// do sends req and reads the answer into resp, within timeout. The error
// is nil when the endpoint answered, also when its body was over
// maxResponseBody (resp then has the status and headers, not the body).
func (c *client) do(req *fasthttp.Request, resp *fasthttp.Response, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	err := c.hc.DoDeadline(req, resp, deadline)
	if err != nil && stale(resp, err) && c.ctx.Err() == nil {
		err = c.hc.DoDeadline(req, resp, deadline)
	}
	if errors.Is(err, fasthttp.ErrBodyTooLarge) {
		// Only a body is too large, so the header was read: the answer
		// counts, and the connection is closed, as net/http's would be
		// with the rest of the body unread.
		return nil
	}
	if err != nil && c.ctx.Err() != nil {
		return c.ctx.Err()
	}
	return err
}

// stale reports whether a post failed on a kept connection the endpoint
// had closed while it was idle: net/http notices such a close before it
// reuses the connection, fasthttp only when it posts on it, so the post
// goes again once, on a new connection. The endpoint may have taken the
// event before closing: the retry is then a duplicate with the same
// webhook-id, as the next attempt's would be. A connection that never
// answered is not retried: the endpoint is dropping connections.
func stale(resp *fasthttp.Response, err error) bool {
	a, ok := resp.LocalAddr().(*connAddr)
	if !ok || !a.tc.answered.Load() {
		return false
	}
	return errors.Is(err, io.EOF) || errors.Is(err, fasthttp.ErrConnectionClosed) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// dial opens a connection the client tracks until it is closed.
func (c *client) dial(addr string, timeout time.Duration) (net.Conn, error) {
	d := c.dialer
	d.Timeout = timeout
	conn, err := d.DialContext(c.ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	tc := &trackedConn{Conn: conn, c: c}
	tc.laddr = &connAddr{Addr: conn.LocalAddr(), tc: tc}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		conn.Close()
		return nil, errClientClosed
	}
	c.conns[tc] = struct{}{}
	return tc, nil
}

// abort closes every connection, idle or posting, and stops dialling.
func (c *client) abort() {
	c.mu.Lock()
	c.closed = true
	conns := make([]*trackedConn, 0, len(c.conns))
	for tc := range c.conns {
		conns = append(conns, tc)
	}
	c.mu.Unlock()
	for _, tc := range conns {
		tc.Close()
	}
}

// close ends the client: it no longer follows its context, and its
// connections are closed. fasthttp's idle-connection cleaner, its own
// goroutine, notices within its idle period and exits.
func (c *client) close() {
	c.unbind()
	c.abort()
	c.hc.CloseIdleConnections()
}

// trackedConn is a connection that leaves its client's set when closed,
// and knows whether it ever answered.
type trackedConn struct {
	net.Conn
	c        *client
	laddr    *connAddr
	answered atomic.Bool
}

// connAddr is a trackedConn's local address, through which stale finds
// the connection a failed post used (fasthttp's Response keeps it).
type connAddr struct {
	net.Addr
	tc *trackedConn
}

func (tc *trackedConn) LocalAddr() net.Addr { return tc.laddr }

func (tc *trackedConn) Read(p []byte) (int, error) {
	n, err := tc.Conn.Read(p)
	if n > 0 && !tc.answered.Load() {
		tc.answered.Store(true)
	}
	return n, err
}

func (tc *trackedConn) Close() error {
	tc.c.mu.Lock()
	delete(tc.c.conns, tc)
	tc.c.mu.Unlock()
	return tc.Conn.Close()
}
