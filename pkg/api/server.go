package api

import (
	"context"
	"errors"
	"fmt"
	"github.com/chatd/chatd/internal/logsample"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chatd/chatd/pkg/wire"
	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/adaptor"
	"github.com/gofiber/fiber/v2/middleware/recover"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Server is chatd's HTTP edge: REST, the WebSocket gateway, health and
// metrics on one Fiber app. Create it with New; Run or Serve it; Shutdown
// closes every WebSocket with 1001 going away and then stops Fiber.
type Server struct {
	cfg Config
	log *slog.Logger
	// sampled logs what can repeat for every request (a database outage).
	sampled  *logsample.Sampler
	app      *fiber.App
	verifier *verifier
	metrics  *metrics
	rest     *userLimiter
	gw       *gateway
	// members caches chats' member lists for typing and receipts.
	members *memberCache
	// static holds the demo's and the SDK's files, read once in New.
	static staticFiles
	// serviceREST is the REST bucket of service identities (service.go).
	serviceREST *userLimiter

	// unready makes /readyz fail; set by Unready, first step of shutdown.
	unready atomic.Bool
	// ready runs Config.Ready for /readyz, at most once per ReadyCheckTTL.
	ready *readyCache

	shutdownOnce sync.Once
	shutdownErr  error
}

// New builds a Server from cfg (see Config for the required fields and
// defaults). It registers the API metrics on cfg.Registry, so one registry
// serves one Server.
func New(cfg Config) (*Server, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	log := cfg.Logger.With("component", "api")
	var keys *jwks
	if cfg.JWKS.URL != "" {
		var err error
		if keys, err = newJWKS(cfg.JWKS, cfg.Registry, log, cfg.Now); err != nil {
			return nil, err
		}
	}
	m := newMetrics(cfg.Registry)
	s := &Server{
		cfg:      cfg,
		log:      log,
		sampled:  logsample.New(log, logsample.Config{}),
		verifier: newVerifier(cfg.JWTSecret, keys, cfg.Now),
		metrics:  m,
		rest:     newUserLimiter(cfg.REST.RatePerSecond, cfg.REST.Burst, cfg.Now),
	}
	s.serviceREST = newUserLimiter(cfg.Service.RatePerSecond, cfg.Service.Burst, cfg.Now)
	s.static = staticFiles{}
	if err := s.static.load(cfg.Demo, ""); err != nil {
		return nil, err
	}
	if err := s.static.load(cfg.SDK, "/sdk"); err != nil {
		return nil, err
	}
	s.gw = newGateway(s)
	s.members = newMemberCache(cfg.Chats, cfg.Now)
	s.ready = newReadyCache(cfg.Ready, ReadyCheckTTL, cfg.StoreTimeout, cfg.Now, log)
	s.app = fiber.New(fiber.Config{
		DisableStartupMessage: true,
		// Immutable: strings taken from a request (params, queries) are
		// handed to ingest and the store, which may keep them after the
		// handler returns; Fiber would otherwise reuse their bytes.
		Immutable:    true,
		ErrorHandler: s.fiberErrors,
		BodyLimit:    max(64<<10, cfg.Limits.MaxFrameBytes),
		// fasthttp's read buffer is the header limit (see MaxHeaderBytes).
		ReadBufferSize: cfg.HTTP.MaxHeaderBytes,
		// fasthttp returns that buffer to its pool once a request is read
		// unless bytes past the request are buffered. Without this, an
		// upgraded WebSocket keeps the buffer for its whole life (the
		// hijacked socket reads through it): 4 KiB per idle connection.
		ReduceMemoryUsage: true,
		// fasthttp sets this deadline before reading each request and
		// clears it when a WebSocket takes over the connection, so it
		// bounds plain requests only.
		ReadTimeout: cfg.HTTP.ReadTimeout,
		// A keep-alive connection waiting for its next request is closed
		// after this; without it an idle client holds a connection (and a
		// server goroutine) forever. WebSockets set their own deadlines.
		IdleTimeout: 2 * time.Minute,
	})
	// A WebSocket's session outlives fasthttp's hijack handler and closes
	// its own socket (see gateway.serve); without this fasthttp would close
	// the socket when the handler returns.
	s.app.Server().KeepHijackedConns = true
	s.routes()
	s.answerUnknownMethods()
	return s, nil
}

func (s *Server) routes() {
	s.app.Use(recover.New(), s.countResponses)
	s.app.Get("/healthz", s.healthz)
	s.app.Get("/readyz", s.readyz)
	s.app.Get("/metrics", adaptor.HTTPHandler(promhttp.HandlerFor(s.cfg.Registry, promhttp.HandlerOpts{})))
	s.app.Get("/ws", s.gw.preUpgrade, s.gw.upgrade())
	// Before the /api group, whose middleware would ask for a token.
	s.app.Get("/api/openapi.yaml", s.openAPI)

	// CORS before authentication: a preflight carries no token.
	if h := corsHandler(s.cfg.AllowedOrigins); h != nil {
		s.app.Use("/api", h)
	}
	// Registered before the group so that it needs no token; it answers
	// 404 itself unless DevLogin is set, before the body is looked at.
	s.app.Post("/api/dev/login", s.devLoginOn, s.requireJSON, s.devLogin)
	// requireJSON after the token and the rate: a caller without a token
	// learns nothing else, and a refused body still costs a token.
	api := s.app.Group("/api", s.requireAuth, s.limitREST, s.requireJSON)
	api.Post("/chats", s.createChat)
	api.Post("/chats/direct", s.directChat)
	api.Get("/chats", s.listChats)
	api.Post("/chats/:id/members", s.addMember)
	api.Delete("/chats/:id/members/:user", s.removeMember)
	api.Get("/chats/:id/messages", s.history)
	api.Post("/chats/:id/messages", s.postMessage)
	s.eventRoutes(api)
	api.Get("/admin/outbox", s.requireAdmin, s.outbox)
	api.Get("/admin/webhooks/failed", s.requireAdmin, s.requireWebhooks, s.webhooksFailed)
	api.Post("/admin/webhooks/failed/replay", s.requireAdmin, s.requireWebhooks, s.webhooksReplayMany)
	api.Post("/admin/webhooks/failed/:id/replay", s.requireAdmin, s.requireWebhooks, s.webhookReplay)
	s.adminChatRoutes(api)
	api.Get("/presence", s.presence)

	// Last, so no file can shadow an API route.
	s.app.Get("/*", s.serveStatic)
}

// App is the Fiber app, for tests (app.Test) and for embedding.
func (s *Server) App() *fiber.App { return s.app }

// Run listens on Config.Listen and serves until ctx ends, then shuts down
// (bounded by Config.HTTP.ShutdownTimeout). It returns after the shutdown.
func (s *Server) Run(ctx context.Context) error {
	ln, err := net.Listen("tcp", s.cfg.Listen)
	if err != nil {
		return fmt.Errorf("api listen: %w", err)
	}
	return s.Serve(ctx, ln)
}

// Serve is Run on a listener the caller opened (tests use port 0). With a
// JWKS URL it also refreshes the key set every JWKSConfig.RefreshInterval,
// and stops that before it returns.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	defer s.sampled.Flush()
	if keys := s.verifier.keys; keys != nil {
		// The JWKS refresher lives as long as Serve, which waits for it.
		rctx, stop := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); keys.run(rctx) }()
		defer func() { stop(); <-done }()
	}
	ll := newLimitListener(ln, s.cfg.HTTP.MaxConnections, s.cfg.HTTP.ReadTimeout, s.cfg.Now, s.metrics, s.log)
	// The lingering closes end within lingerFor of the last close.
	defer ll.wait()
	ln = ll
	errc := make(chan error, 1)
	go func() { errc <- s.app.Listener(ln) }()
	select {
	case err := <-errc:
		if err != nil {
			return fmt.Errorf("api serve: %w", err)
		}
		return nil
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.HTTP.ShutdownTimeout)
	defer cancel()
	err := s.Shutdown(sctx)
	if serr := <-errc; serr != nil && err == nil {
		err = fmt.Errorf("api serve: %w", serr)
	}
	return err
}

// Unready makes /readyz answer 503 from now on while everything else keeps
// serving. Call it first when shutting down, so a load balancer stops
// sending new sockets before ingest drains and the sockets are closed.
// Shutdown implies it. Safe for concurrent use.
func (s *Server) Unready() { s.unready.Store(true) }

// Shutdown refuses new WebSocket upgrades, closes every live WebSocket with
// 1001 going away, waits for their handlers, then shuts Fiber down (which by
// itself would leave hijacked WebSockets open). Later calls return the first
// call's result.
func (s *Server) Shutdown(ctx context.Context) error {
	s.shutdownOnce.Do(func() {
		s.Unready()
		gerr := s.gw.shutdown(ctx)
		ferr := s.app.ShutdownWithContext(ctx)
		if ferr != nil {
			ferr = fmt.Errorf("api shutdown: %w", ferr)
		}
		s.shutdownErr = errors.Join(gerr, ferr)
	})
	return s.shutdownErr
}

// countResponses counts every response by status. It renders a handler's
// error itself so the count sees the final status.
func (s *Server) countResponses(c *fiber.Ctx) error {
	if err := c.Next(); err != nil {
		if herr := s.fiberErrors(c, err); herr != nil {
			return herr
		}
	}
	s.metrics.responses.WithLabelValues(strconv.Itoa(c.Response().StatusCode())).Inc()
	return nil
}

// limitREST applies the per-user REST token bucket: 429 with Retry-After.
func (s *Server) limitREST(c *fiber.Ctx) error {
	id := identity(c)
	ok, wait := s.restLimiter(id).allow(id.User)
	if !ok {
		c.Set(fiber.HeaderRetryAfter, strconv.Itoa(retryAfterSeconds(wait)))
		return writeError(c, fiber.StatusTooManyRequests, wire.CodeRateLimited, "too many requests")
	}
	return c.Next()
}
