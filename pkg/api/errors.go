package api

import (
	"context"
	"errors"

	"github.com/chatd/chatd"
	"github.com/gofiber/fiber/v2"
)

// Wire error codes, shared by REST bodies and `rejected` frames.
const (
	codeInvalid      = "invalid"
	codeTooLarge     = "too_large"
	codeTooMany      = "too_many_members"
	codeForbidden    = "forbidden"
	codeNotFound     = "not_found"
	codeConflict     = "conflict"
	codeCIDConflict  = "cid_conflict"
	codeRateLimited  = "rate_limited"
	codeOverloaded   = "overloaded"
	codeUnavailable  = "unavailable"
	codeInternal     = "internal"
	codeUnauthorized = "unauthorized"
)

// errorCode maps a domain error to its wire code and HTTP status. It is the
// one place where chatd's errors become statuses (STYLE: only pkg/api maps).
func errorCode(err error) (code string, status int) {
	switch {
	case errors.Is(err, chatd.ErrTooLarge):
		// 400, not 413: the contract answers every bad body with 400; the
		// code tells the client which rule it broke.
		return codeTooLarge, fiber.StatusBadRequest
	case errors.Is(err, chatd.ErrTooManyMembers):
		return codeTooMany, fiber.StatusBadRequest
	case errors.Is(err, chatd.ErrInvalid):
		return codeInvalid, fiber.StatusBadRequest
	case errors.Is(err, chatd.ErrForbidden):
		return codeForbidden, fiber.StatusForbidden
	case errors.Is(err, chatd.ErrNotFound):
		return codeNotFound, fiber.StatusNotFound
	case errors.Is(err, chatd.ErrCIDConflict):
		return codeCIDConflict, fiber.StatusConflict
	case errors.Is(err, chatd.ErrConflict):
		return codeConflict, fiber.StatusConflict
	case errors.Is(err, chatd.ErrRateLimited):
		return codeRateLimited, fiber.StatusTooManyRequests
	case errors.Is(err, chatd.ErrOverloaded):
		return codeOverloaded, fiber.StatusServiceUnavailable
	case errors.Is(err, chatd.ErrUnavailable), errors.Is(err, chatd.ErrClosed),
		errors.Is(err, context.DeadlineExceeded):
		return codeUnavailable, fiber.StatusServiceUnavailable
	}
	return codeInternal, fiber.StatusInternalServerError
}

// rejectCode maps a send failure to a `rejected` code. The contract's set is
// closed (overloaded|rate_limited|forbidden|not_found|invalid|too_large), so
// failures outside it (a failed transaction, shutdown) become overloaded:
// nothing was stored and the client may resend with the same cid.
func rejectCode(err error) string {
	code, _ := errorCode(err)
	switch code {
	case codeInvalid, codeTooLarge, codeForbidden, codeNotFound, codeRateLimited:
		return code
	case codeConflict, codeCIDConflict:
		return codeInvalid
	case codeTooMany:
		return codeTooLarge
	}
	return codeOverloaded
}

// errorBody is the JSON error of every REST failure.
type errorBody struct {
	Error string `json:"error"`
	Code  string `json:"code"`
}

func writeError(c *fiber.Ctx, status int, code, msg string) error {
	return c.Status(status).JSON(errorBody{Error: msg, Code: code})
}

// fail answers a request that failed with err. Client errors carry the
// domain message (it names the rule broken, never internals); server errors
// are logged and answered with a generic message.
func (s *Server) fail(c *fiber.Ctx, err error) error {
	code, status := errorCode(err)
	msg := err.Error()
	if status >= 500 {
		if status == fiber.StatusServiceUnavailable {
			c.Set(fiber.HeaderRetryAfter, "1")
		}
		if status == fiber.StatusInternalServerError {
			s.sampled.Error("request failed", "method", c.Method(), "path", c.Route().Path, "err", err)
		} else {
			s.log.Debug("request unavailable", "method", c.Method(), "path", c.Route().Path, "err", err)
		}
		msg = code
	}
	return writeError(c, status, code, msg)
}

// fiberErrors turns Fiber's own errors (no route, wrong method, body too
// large) into the JSON error shape.
func (s *Server) fiberErrors(c *fiber.Ctx, err error) error {
	var fe *fiber.Error
	if errors.As(err, &fe) {
		code := codeInvalid
		switch fe.Code {
		case fiber.StatusNotFound:
			code = codeNotFound
		case fiber.StatusRequestEntityTooLarge:
			code = codeTooLarge
		case fiber.StatusServiceUnavailable:
			code = codeUnavailable
		case fiber.StatusUnauthorized:
			code = codeUnauthorized
		}
		return writeError(c, fe.Code, code, fe.Message)
	}
	return s.fail(c, err)
}
