package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/pkg/wire"
	"github.com/fasthttp/websocket"
)

// stableAfter is how long a session must stay up after hello for the next
// reconnect to start again from the shortest backoff; a server that closes
// every session at once keeps the delay growing instead.
const stableAfter = time.Second

// Run connects and keeps the client connected until ctx ends or Close is
// called, then closes the connection cleanly, stops every goroutine it
// started, closes the Events channel, and returns nil. It returns an error,
// without retrying, when chatd refuses the token (ErrUnauthorized: HTTP 401
// or close 4401) or a newer session of the same device took over
// (ErrSuperseded: close 4003). Every other failure is retried with backoff.
// Run may be called only once.
func (c *Client) Run(ctx context.Context) error {
	if !c.started.CompareAndSwap(false, true) {
		return errors.New("client: Run called more than once")
	}
	defer close(c.runDone)
	defer close(c.events)
	defer c.closeIdleHTTP()

	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		select {
		case <-c.closed:
		case <-ctx.Done():
		}
		close(c.stopping)
		cancel()
	}()
	defer wg.Wait()
	defer cancel()

	for attempt := 0; ; attempt++ {
		upFor, err := c.connectOnce(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if errors.Is(err, ErrUnauthorized) || errors.Is(err, ErrSuperseded) {
			return fmt.Errorf("client run: %w", err)
		}
		if upFor >= stableAfter {
			attempt = 0
		}
		d := c.backoff.delay(attempt)
		c.nextEndpoint()
		c.log.Debug("reconnecting", "in", d, "attempt", attempt+1, "to", c.endpoint().rest, "err", err)
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
}

// connectOnce dials, runs one session to its end, and returns how long it
// stayed up after hello and why it ended.
func (c *Client) connectOnce(ctx context.Context) (time.Duration, error) {
	conn, tok, err := c.dial(ctx)
	if err != nil {
		c.stats.dialFailures.Add(1)
		return 0, err
	}
	hello, err := c.readHello(conn)
	if err != nil {
		conn.Close()
		c.stats.dialFailures.Add(1)
		return 0, err
	}
	start := time.Now()
	err = c.runSession(ctx, conn, hello, tok)
	upFor := time.Since(start)

	var ce *CloseError
	code, reason := 0, ""
	if errors.As(err, &ce) {
		code, reason = ce.Code, ce.Reason
		if reason == "" {
			reason = CloseReason(code)
		}
	}
	c.stats.disconnect(code)
	if ctx.Err() == nil {
		c.log.Info("disconnected", "code", code, "reason", reason, "err", err)
	}
	ev := Event{Kind: EventState, State: State{CloseCode: code, Reason: reason}}
	if ctx.Err() == nil {
		c.emit(ctx, ev)
	} else {
		// Shutting down: report it only if there is room, never block Run.
		select {
		case c.events <- ev:
		default:
		}
	}
	return upFor, err
}

// dial opens the WebSocket with the token in the Authorization header, and
// returns that token too: the session refreshes it before its exp.
func (c *Client) dial(ctx context.Context) (*websocket.Conn, string, error) {
	tok, err := c.token(ctx)
	if err != nil {
		return nil, "", err
	}
	d := websocket.Dialer{
		Proxy:            http.ProxyFromEnvironment,
		HandshakeTimeout: c.cfg.DialTimeout,
	}
	wsURL := c.endpoint().ws
	conn, resp, err := d.DialContext(ctx, wsURL, http.Header{"Authorization": {"Bearer " + tok}})
	if resp != nil && resp.Body != nil {
		resp.Body.Close()
	}
	if err != nil {
		if resp != nil && resp.StatusCode == http.StatusUnauthorized {
			return nil, "", fmt.Errorf("dial %s: %w", wsURL, ErrUnauthorized)
		}
		return nil, "", fmt.Errorf("dial %s: %w", wsURL, err)
	}
	conn.SetReadLimit(c.cfg.MaxFrameBytes)
	return conn, tok, nil
}

// readHello waits for the first frame, which must be `hello`.
func (c *Client) readHello(conn *websocket.Conn) (*wire.ServerFrame, error) {
	if err := conn.SetReadDeadline(time.Now().Add(c.cfg.DialTimeout)); err != nil {
		return nil, fmt.Errorf("read hello: %w", err)
	}
	_, data, err := conn.ReadMessage()
	if err != nil {
		return nil, fmt.Errorf("read hello: %w", closeError(err))
	}
	var f wire.ServerFrame
	if err := wire.DecodeServerFrame(data, &f); err != nil || f.Type != wire.FrameHello {
		return nil, fmt.Errorf("read hello: first frame %.80q is not hello", data)
	}
	return &f, nil
}

// token returns the token to present now.
func (c *Client) token(ctx context.Context) (string, error) {
	if c.cfg.TokenFunc == nil {
		return c.cfg.Token, nil
	}
	tok, err := c.cfg.TokenFunc(ctx)
	if err != nil {
		return "", fmt.Errorf("token: %w", err)
	}
	return tok, nil
}

// closeError turns a read error into a *CloseError carrying the close code.
func closeError(err error) *CloseError {
	var wce *websocket.CloseError
	if errors.As(err, &wce) {
		return &CloseError{Code: wce.Code, Reason: wce.Text, Err: err}
	}
	return &CloseError{Err: err}
}

// errRunStopped is what sends see when Run has returned or Close was called.
var errRunStopped = fmt.Errorf("client: %w", chatd.ErrClosed)
