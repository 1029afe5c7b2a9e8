package api

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/pkg/wire"
	"github.com/gofiber/fiber/v2"
	"github.com/golang-jwt/jwt/v5"
)

// ErrUnauthorized is returned by VerifyToken for any token that does not
// authenticate; the API answers it with HTTP 401.
var ErrUnauthorized = errors.New("unauthorized")

// maxTokenBytes bounds a token before it is parsed: a real one is a few
// hundred bytes, and parsing costs more than comparing a length.
const maxTokenBytes = 2048

// Identity is who a verified token speaks for.
type Identity struct {
	User   string
	Device string
	// Expires is the token's exp. A WebSocket session is closed with 4401
	// at this time unless the client refreshes in-band (see ws_auth.go).
	Expires time.Time
}

// claims are the token claims the contract names: sub (the user), exp, and an
// optional dev (the device).
type claims struct {
	Dev string `json:"dev,omitempty"`
	jwt.RegisteredClaims
}

// IssueToken signs an HS256 token for user and device, valid for ttl. An
// empty device issues a token without `dev` (the default device). It returns
// an error wrapping chatd.ErrInvalid for a bad user, device or ttl.
func IssueToken(secret []byte, user, device string, ttl time.Duration) (string, error) {
	switch {
	case len(secret) == 0:
		return "", fmt.Errorf("issue token: empty secret: %w", chatd.ErrInvalid)
	case !chatd.ValidUserID(user):
		return "", fmt.Errorf("issue token: user %q: %w", user, chatd.ErrInvalid)
	case device != "" && !chatd.ValidDeviceID(device):
		return "", fmt.Errorf("issue token: device %q: %w", device, chatd.ErrInvalid)
	case ttl <= 0:
		return "", fmt.Errorf("issue token: ttl %v: %w", ttl, chatd.ErrInvalid)
	}
	now := time.Now()
	c := claims{Dev: device, RegisteredClaims: jwt.RegisteredClaims{
		Subject:   user,
		IssuedAt:  jwt.NewNumericDate(now),
		ExpiresAt: jwt.NewNumericDate(now.Add(ttl)),
	}}
	s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString(secret)
	if err != nil {
		return "", fmt.Errorf("issue token: %w", err)
	}
	return s, nil
}

// VerifyToken checks an HS256 token signed with secret and returns its
// identity. The algorithm is pinned to HS256 (so `alg: none` and every
// asymmetric-confusion trick fail), `exp` is required and enforced, `sub`
// must be a valid user id and `dev`, when present, a valid device id. Every
// failure wraps ErrUnauthorized.
func VerifyToken(secret []byte, token string) (Identity, error) {
	return newVerifier(secret, time.Now).verify(token)
}

// verifier is VerifyToken with its parser built once and a clock to move in tests.
type verifier struct {
	secret []byte
	parser *jwt.Parser
}

func newVerifier(secret []byte, now func() time.Time) *verifier {
	return &verifier{
		secret: secret,
		parser: jwt.NewParser(
			jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
			jwt.WithExpirationRequired(),
			jwt.WithTimeFunc(now),
		),
	}
}

func (v *verifier) verify(token string) (Identity, error) {
	if token == "" {
		return Identity{}, fmt.Errorf("no token: %w", ErrUnauthorized)
	}
	if len(token) > maxTokenBytes {
		return Identity{}, fmt.Errorf("token longer than %d bytes: %w", maxTokenBytes, ErrUnauthorized)
	}
	var c claims
	_, err := v.parser.ParseWithClaims(token, &c, func(*jwt.Token) (any, error) { return v.secret, nil })
	if err != nil {
		return Identity{}, fmt.Errorf("%w: %w", ErrUnauthorized, err)
	}
	if !chatd.ValidUserID(c.Subject) {
		return Identity{}, fmt.Errorf("sub %q is not a user id: %w", c.Subject, ErrUnauthorized)
	}
	dev := c.Dev
	if dev == "" {
		dev = chatd.DefaultDevice
	} else if !chatd.ValidDeviceID(dev) {
		return Identity{}, fmt.Errorf("dev %q is not a device id: %w", dev, ErrUnauthorized)
	}
	return Identity{User: c.Subject, Device: dev, Expires: c.ExpiresAt.Time}, nil
}

// bearer extracts the token of an `Authorization: Bearer T` header value.
func bearer(header string) string {
	const prefix = "bearer "
	if len(header) > len(prefix) && strings.EqualFold(header[:len(prefix)], prefix) {
		return strings.TrimSpace(header[len(prefix):])
	}
	return ""
}

const identityKey = "chatd.identity"

// requireAuth is the REST middleware: a verified Bearer token, or 401.
func (s *Server) requireAuth(c *fiber.Ctx) error {
	return s.authenticate(c, bearer(c.Get(fiber.HeaderAuthorization)))
}

// authenticate stores the token's identity in the request, or answers 401
// (before any upgrade, so a WebSocket client sees a plain HTTP 401).
func (s *Server) authenticate(c *fiber.Ctx, token string) error {
	id, err := s.verifier.verify(token)
	if err != nil {
		s.log.Debug("auth failed", "path", c.Path(), "err", err)
		c.Set(fiber.HeaderWWWAuthenticate, `Bearer realm="chatd"`)
		return writeError(c, fiber.StatusUnauthorized, wire.CodeUnauthorized, "missing or invalid token")
	}
	c.Locals(identityKey, id)
	return c.Next()
}

// identity is the caller of an authenticated request.
func identity(c *fiber.Ctx) Identity {
	id, _ := c.Locals(identityKey).(Identity)
	return id
}
