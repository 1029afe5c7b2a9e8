package api

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/chatd/chatd/pkg/push"
	"github.com/chatd/chatd/pkg/wire"
	"github.com/fasthttp/websocket"
	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"
)

// gateway owns the WebSocket side: the upgrade checks and the sessions'
// lifetimes (so shutdown can refuse new ones and wait for the rest). The
// live sessions are registered in Config.Delivery, the node's one registry
// of connections, where shutdown, signals and presence find them. Safe for
// concurrent use.
type gateway struct {
	cfg     *Config
	srv     *Server
	metrics *metrics
	// writeBuffers is the library's pool of write buffers. It frames only
	// control frames, which need none, so the pool stays empty; without a
	// pool the library would give every connection a buffer of its own.
	writeBuffers sync.Pool
	// frameBuffers lends the session writers their buffer for one write of
	// data frames (ws_write.go).
	frameBuffers sync.Pool
	// readBuffers lends the session readers their buffer for one read of
	// the socket (ws_read_socket.go): a session waiting for bytes holds none.
	readBuffers sync.Pool

	// penalties keeps users out for a while after an abuse close
	// (ws_penalty.go).
	penalties penaltyBox

	mu       sync.Mutex
	shutting bool           // no new sessions once set
	live     sync.WaitGroup // one per session handler; Add only under mu while !shutting
}

func newGateway(s *Server) *gateway {
	return &gateway{
		cfg:       &s.cfg,
		srv:       s,
		metrics:   s.metrics,
		penalties: penaltyBox{first: s.cfg.Abuse.Wait},
	}
}

// preUpgrade runs before the upgrade, so every refusal is a plain HTTP
// answer: 426 for a non-WebSocket request (400 for a handshake the
// library then refuses, in upgrade), 503 (with Retry-After) while
// shutting down or while live delivery is not ready, 403 for
// a foreign origin, 401 for a bad token (`?token=` or Authorization: Bearer).
func (g *gateway) preUpgrade(c *fiber.Ctx) error {
	if !websocket.FastHTTPIsWebSocketUpgrade(c.Context()) {
		// RFC 9110: a 426 names the protocol to upgrade to.
		c.Set(fiber.HeaderUpgrade, "websocket")
		c.Set(fiber.HeaderSecWebSocketVersion, "13")
		return writeError(c, fiber.StatusUpgradeRequired, wire.CodeInvalid,
			"websocket upgrade required: send GET /ws with Upgrade: websocket and Connection: Upgrade")
	}
	if g.closing() {
		return writeError(c, fiber.StatusServiceUnavailable, wire.CodeUnavailable, "shutting down")
	}
	if err := g.cfg.Delivery.Ready(); err != nil {
		// Until the node's consumer exists (and while NATS is unreachable)
		// a session would miss live messages after its `hello`.
		c.Set(fiber.HeaderRetryAfter, "1")
		return writeError(c, fiber.StatusServiceUnavailable, wire.CodeUnavailable,
			"live delivery not ready on this node; retry shortly or use another node")
	}
	if !g.originAllowed(c.Get(fiber.HeaderOrigin), string(c.Request().Host())) {
		return writeError(c, fiber.StatusForbidden, wire.CodeForbidden, "origin not allowed")
	}
	token := c.Query("token")
	if token == "" {
		token = bearer(c.Get(fiber.HeaderAuthorization))
	}
	return g.srv.authenticate(c, token)
}

// originAllowed: no Origin (not a browser) is allowed; otherwise the origin
// must be listed in AllowedOrigins ("*" for any) or, when the list is empty,
// be the same origin as the request's Host.
func (g *gateway) originAllowed(origin, host string) bool {
	if origin == "" {
		return true
	}
	for _, o := range g.cfg.AllowedOrigins {
		if o == "*" || strings.EqualFold(o, origin) {
			return true
		}
	}
	if len(g.cfg.AllowedOrigins) > 0 {
		return false
	}
	u, err := url.Parse(origin)
	return err == nil && u.Host != "" && strings.EqualFold(u.Host, host)
}

// upgrade upgrades to a WebSocket with fasthttp/websocket's upgrader
// directly: gofiber/contrib/websocket would copy every header, query
// (the token too), cookie and local into maps that live as long as the
// socket, ~1 KiB per idle connection for values no session reads. The
// origin was checked in preUpgrade (where a refusal can be a clear 403),
// hence any origin here. Compression stays off: frames are small and
// per-message deflate costs memory per connection. The session reads
// frames itself (frameParser), and closes one over the read limit with the
// contract's 4400.
func (g *gateway) upgrade() fiber.Handler {
	up := websocket.FastHTTPUpgrader{
		CheckOrigin:       func(*fasthttp.RequestCtx) bool { return true },
		EnableCompression: false,

		// The library's reader is not used: the session parses the
		// frames it reads from the socket itself (ws_frames.go). Its
		// buffer, which the library allocates anyway, is the smallest
		// the library takes. Data frames are written by the session
		// (ws_write.go) from buffers lent for one write; an idle
		// connection holds no write buffer.
		ReadBufferSize:  1,
		WriteBufferSize: 4096,
		WriteBufferPool: &g.writeBuffers,
	}
	return func(c *fiber.Ctx) error {
		id, _ := c.Locals(identityKey).(Identity)
		if wait := g.penalties.waitFor(id.User, g.cfg.Now()); wait > 0 {
			c.Set(fiber.HeaderRetryAfter, strconv.Itoa(int((wait+time.Second-1)/time.Second)))
			return writeError(c, fiber.StatusTooManyRequests, wire.CodeRateLimited,
				"this user's last connection was closed for refused or invalid frames; reconnect after Retry-After")
		}
		if err := up.Upgrade(c.Context(), func(conn *websocket.Conn) { g.serve(conn, id) }); err != nil {
			// The library refused the handshake (another version, no key)
			// and set its status: answered with the document's error and,
			// as RFC 6455 asks, the version this server speaks.
			c.Set(fiber.HeaderSecWebSocketVersion, "13")
			return writeError(c, c.Response().StatusCode(), wire.CodeInvalid, err.Error())
		}
		// The hijacked connection is served after this handler returns.
		markUpgraded(c.Context().Conn())
		return nil
	}
}

// serve starts one connection's session on a goroutine of its own and
// returns: fasthttp (KeepHijackedConns, see New) then releases the
// request's context, headers and token, and the idle session's stack holds
// only its own frames. Bytes the client sent past its upgrade request stay
// with the hijacked connection, which reads them before the socket.
func (g *gateway) serve(conn *websocket.Conn, id Identity) {
	s := newSession(g, conn, id)
	if !g.add() {
		s.refuse("server shutting down")
		_ = conn.Close()
		return
	}
	go g.runSession(s)
}

// runSession runs s until it ends and then closes its socket, which
// fasthttp leaves open (KeepHijackedConns). The socket is closed before
// the session counts as gone, so shutdown returns with every socket
// closed. A panic is logged and ends only this connection.
func (g *gateway) runSession(s *session) {
	defer g.remove()
	defer func() {
		if r := recover(); r != nil {
			g.srv.log.Error("websocket handler panicked", "panic", fmt.Sprint(r))
		}
		_ = s.conn.Close()
	}()
	g.metrics.connections.Inc()
	defer g.metrics.connections.Dec()
	s.run()
}

// add counts a session handler in, unless the gateway is shutting down.
func (g *gateway) add() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.shutting {
		return false
	}
	g.live.Add(1)
	return true
}

// remove counts a session handler out once its socket is closed.
func (g *gateway) remove() { g.live.Done() }

// sessionsOf returns the live sessions of users on this node.
func (g *gateway) sessionsOf(users ...string) []*session {
	return sessionsIn(g.cfg.Delivery.Conns(users...))
}

// sessionsIn picks this gateway's sessions out of registered connections
// (all of them, in a node: only the gateway registers any).
func sessionsIn(conns []push.Conn) []*session {
	out := make([]*session, 0, len(conns))
	for _, c := range conns {
		if s, ok := c.(*session); ok {
			out = append(out, s)
		}
	}
	return out
}

func (g *gateway) closing() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.shutting
}

// shutdown refuses new sessions, closes every live one with 1001 going away
// and waits for their handlers. If ctx ends first, the remaining sockets are
// cut without a close handshake.
func (g *gateway) shutdown(ctx context.Context) error {
	g.mu.Lock()
	g.shutting = true
	g.mu.Unlock()
	// A session that registers after this listing sees shutting (see
	// session.run) and closes itself.
	all := sessionsIn(g.cfg.Delivery.AllConns())
	for _, s := range all {
		s.closeWith(wire.CloseGoingAway, "server shutting down")
	}
	done := make(chan struct{})
	go func() { g.live.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		for _, s := range all {
			s.abort()
		}
		<-done
		return fmt.Errorf("close websockets: %w", ctx.Err())
	}
}
