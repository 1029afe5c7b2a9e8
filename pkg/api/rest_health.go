package api

import (
	"context"
	"errors"
	"log/slog"

	"github.com/chatd/chatd/pkg/push"
	"github.com/chatd/chatd/pkg/wire"
	"github.com/gofiber/fiber/v2"
)

// healthz is liveness: the process serves HTTP.
func (s *Server) healthz(c *fiber.Ctx) error {
	return c.JSON(fiber.Map{"status": "ok"})
}

// readyz is readiness: the dependencies Config.Ready checks are reachable
// and the server is not shutting down (see Unready).
func (s *Server) readyz(c *fiber.Ctx) error {
	if s.unready.Load() || s.gw.closing() {
		return writeError(c, fiber.StatusServiceUnavailable, wire.CodeUnavailable, "shutting down")
	}
	if s.cfg.Ready != nil {
		ctx, cancel := context.WithTimeout(c.UserContext(), s.cfg.StoreTimeout)
		defer cancel()
		if err := s.cfg.Ready(ctx); err != nil {
			// The consumer not live yet is every start (and push warns
			// itself when a live one is lost): not worth a WARN per poll.
			level := slog.LevelWarn
			if errors.Is(err, push.ErrNotConsuming) {
				level = slog.LevelDebug
			}
			s.log.Log(ctx, level, "not ready", "err", err)
			return writeError(c, fiber.StatusServiceUnavailable, wire.CodeUnavailable, "not ready")
		}
	}
	return c.JSON(fiber.Map{"status": "ready"})
}
