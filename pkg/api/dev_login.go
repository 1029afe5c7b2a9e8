package api

import (
	"fmt"
	"strconv"
	"time"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/pkg/wire"
	"github.com/gofiber/fiber/v2"
)

// DevLoginTTL is the lifetime of a token from the development login.
const DevLoginTTL = 24 * time.Hour

type devLoginRequest struct {
	User   string `json:"user"`
	Device string `json:"device"`
}

type devLoginResponse struct {
	Token string `json:"token"`
	User  string `json:"user"`
}

// devLoginOn answers 404, as if there were no such route, unless
// Config.DevLogin is set.
func (s *Server) devLoginOn(c *fiber.Ctx) error {
	if !s.cfg.DevLogin {
		return writeError(c, fiber.StatusNotFound, wire.CodeNotFound, "Cannot POST /api/dev/login")
	}
	return c.Next()
}

// devLogin: POST /api/dev/login {"user":"alice","device":"tab1"} →
// {"token":…,"user":"alice"}, an HS256 token signed with the node's
// secret for anyone who asks. It exists so that `make run` gives a demo one
// can sign in to by name; it is a way in for anybody who reaches the port,
// so the route answers 404 unless Config.DevLogin is set (devLoginOn). The device is
// optional (a token without `dev` is the default device); a browser tab
// passes its own so that two tabs of one user do not supersede each other.
func (s *Server) devLogin(c *fiber.Ctx) error {
	var req devLoginRequest
	if err := decodeBody(c, &req); err != nil {
		return s.fail(c, err)
	}
	if err := chatd.CheckUserID("user", req.User); err != nil {
		return s.fail(c, err)
	}
	if req.Device != "" && !chatd.ValidDeviceID(req.Device) {
		return s.fail(c, fmt.Errorf("device %.80q is not a device id: %w", req.Device, chatd.ErrInvalid))
	}
	// The same per-user bucket as every /api call, so a script cannot mint
	// tokens for one name faster than it could use them.
	if ok, wait := s.rest.allow(req.User); !ok {
		c.Set(fiber.HeaderRetryAfter, strconv.Itoa(retryAfterSeconds(wait)))
		return writeError(c, fiber.StatusTooManyRequests, wire.CodeRateLimited, "too many requests")
	}
	tok, err := IssueToken(s.cfg.JWTSecret, req.User, req.Device, DevLoginTTL)
	if err != nil {
		return s.fail(c, err)
	}
	return c.JSON(devLoginResponse{Token: tok, User: req.User})
}
