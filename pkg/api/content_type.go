package api

import (
	"mime"
	"strings"

	"github.com/chatd/chatd/pkg/wire"
	"github.com/gofiber/fiber/v2"
)

// requireJSON answers 415 to a request whose body is not declared JSON:
// every body chatd reads is decoded as JSON, and taking a text/plain or
// form body as JSON anyway would accept what the document (and a
// validating proxy in front of chatd) calls an invalid request. Parameters
// such as charset are allowed; a request without a body passes, whatever
// its Content-Type, so GET and DELETE are not affected.
func (s *Server) requireJSON(c *fiber.Ctx) error {
	// The raw body: Ctx.Body would also decompress a Content-Encoding,
	// work the handler does again.
	if len(c.Request().Body()) == 0 {
		return c.Next()
	}
	ct := c.Get(fiber.HeaderContentType)
	if mt, _, err := mime.ParseMediaType(ct); err != nil || !strings.EqualFold(mt, fiber.MIMEApplicationJSON) {
		return writeError(c, fiber.StatusUnsupportedMediaType, wire.CodeInvalid,
			"Content-Type "+strings.TrimSpace(ct)+" is not supported: send the body as application/json")
	}
	return c.Next()
}
