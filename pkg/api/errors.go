package api

import (
	"context"
	"errors"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/pkg/wire"
	"github.com/gofiber/fiber/v2"
)

// errorCode maps a domain error to its wire code and HTTP status. It is the
// one place where chatd's errors become statuses: no other package maps
// them, so every path answers one error with one code and status.
func errorCode(err error) (code wire.Code, status int) {
	switch {
	case errors.Is(err, chatd.ErrTooLarge):
		// 400, not 413: the contract answers every bad body with 400; the
		// code tells the client which rule it broke.
		return wire.CodeTooLarge, fiber.StatusBadRequest
	case errors.Is(err, chatd.ErrTooManyMembers):
		return wire.CodeTooManyMembers, fiber.StatusBadRequest
	case errors.Is(err, chatd.ErrInvalid):
		return wire.CodeInvalid, fiber.StatusBadRequest
	case errors.Is(err, chatd.ErrForbidden):
		return wire.CodeForbidden, fiber.StatusForbidden
	case errors.Is(err, chatd.ErrNotFound):
		return wire.CodeNotFound, fiber.StatusNotFound
	case errors.Is(err, chatd.ErrCIDConflict):
		return wire.CodeCIDConflict, fiber.StatusConflict
	case errors.Is(err, chatd.ErrConflict):
		return wire.CodeConflict, fiber.StatusConflict
	case errors.Is(err, chatd.ErrRateLimited):
		return wire.CodeRateLimited, fiber.StatusTooManyRequests
	case errors.Is(err, chatd.ErrOverloaded):
		return wire.CodeOverloaded, fiber.StatusServiceUnavailable
	case errors.Is(err, chatd.ErrUnavailable), errors.Is(err, chatd.ErrOutcomeUnknown),
		errors.Is(err, chatd.ErrClosed), errors.Is(err, context.DeadlineExceeded):
		return wire.CodeUnavailable, fiber.StatusServiceUnavailable
	}
	return wire.CodeInternal, fiber.StatusInternalServerError
}

// rejectCode maps a send failure to a `rejected` code. The contract's set is
// closed (overloaded|rate_limited|forbidden|not_found|invalid|too_large, and
// the addition unavailable). A failed transaction (the database lost, a failover) is
// unavailable; anything else outside the set (shutdown) becomes overloaded.
// Either way the client may resend with the same cid.
func rejectCode(err error) wire.Code {
	code, _ := errorCode(err)
	switch code {
	case wire.CodeInvalid, wire.CodeTooLarge, wire.CodeForbidden, wire.CodeNotFound, wire.CodeRateLimited:
		return code
	case wire.CodeUnavailable:
		if errors.Is(err, chatd.ErrUnavailable) || errors.Is(err, chatd.ErrOutcomeUnknown) {
			return code
		}
	case wire.CodeConflict, wire.CodeCIDConflict:
		return wire.CodeInvalid
	case wire.CodeTooManyMembers:
		return wire.CodeTooLarge
	}
	return wire.CodeOverloaded
}

// outcomeUnknownText is the error of a 503 whose send may have been stored
// (docs/protocol.md, "REST details").
const outcomeUnknownText = "outcome unknown: the send may have been stored; resend with the same cid"

// errorBody is the JSON error of every REST failure.
type errorBody struct {
	Error string    `json:"error"`
	Code  wire.Code `json:"code"`
}

// writeError answers with the JSON error. Every 503 carries Retry-After
// (1 s unless the caller set another): it is temporary by definition, and
// the document promises the header on each one.
func writeError(c *fiber.Ctx, status int, code wire.Code, msg string) error {
	if status == fiber.StatusServiceUnavailable && len(c.Response().Header.Peek(fiber.HeaderRetryAfter)) == 0 {
		c.Set(fiber.HeaderRetryAfter, "1")
	}
	return c.Status(status).JSON(errorBody{Error: msg, Code: code})
}

// fail answers a request that failed with err. Client errors carry the
// domain message (it names the rule broken, never internals); server errors
// are logged and answered with a generic message.
func (s *Server) fail(c *fiber.Ctx, err error) error {
	code, status := errorCode(err)
	msg := err.Error()
	if status >= 500 {
		if status == fiber.StatusInternalServerError {
			s.sampled.Error("request failed", "method", c.Method(), "path", c.Route().Path, "err", err)
		} else {
			s.log.Debug("request unavailable", "method", c.Method(), "path", c.Route().Path, "err", err)
		}
		msg = string(code)
		if errors.Is(err, chatd.ErrOutcomeUnknown) {
			// Unlike every other 503, the send may be stored: say so, so a
			// client does not take "nothing stored" for granted.
			msg = outcomeUnknownText
		}
	}
	return writeError(c, status, code, msg)
}

// fiberErrors turns Fiber's own errors (no route, wrong method, body too
// large) into the JSON error shape.
func (s *Server) fiberErrors(c *fiber.Ctx, err error) error {
	var fe *fiber.Error
	if errors.As(err, &fe) {
		code := wire.CodeInvalid
		switch fe.Code {
		case fiber.StatusNotFound:
			code = wire.CodeNotFound
		case fiber.StatusRequestEntityTooLarge:
			code = wire.CodeTooLarge
		case fiber.StatusServiceUnavailable:
			code = wire.CodeUnavailable
		case fiber.StatusUnauthorized:
			code = wire.CodeUnauthorized
		}
		return writeError(c, fe.Code, code, fe.Message)
	}
	return s.fail(c, err)
}
