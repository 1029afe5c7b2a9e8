package api

import (
	"slices"

	"github.com/chatd/chatd/pkg/wire"
	"github.com/gofiber/fiber/v2"
)

// requireAdmin lets only Config.AdminUsers through (403 otherwise).
func (s *Server) requireAdmin(c *fiber.Ctx) error {
	if !slices.Contains(s.cfg.AdminUsers, identity(c).User) {
		return writeError(c, fiber.StatusForbidden, wire.CodeForbidden, "admin only")
	}
	return c.Next()
}

// outbox: GET /api/admin/outbox → the delivery buffer's admin view.
func (s *Server) outbox(c *fiber.Ctx) error {
	if s.cfg.Outbox == nil {
		return writeError(c, fiber.StatusNotFound, wire.CodeNotFound, "no outbox view configured")
	}
	ctx, cancel := s.storeCtx(c)
	defer cancel()
	v, err := s.cfg.Outbox(ctx)
	if err != nil {
		return s.fail(c, err)
	}
	return c.JSON(v)
}
