package api

import (
	"encoding/base64"
	"encoding/json"
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
	// Service reports a service identity (a bot, an app backend), not a
	// person: its token carries the service claim (see service.go). It is a
	// member, sender and reader like a user, under Config.Service.
	Service bool
}

// claims are the token claims the contract names: sub (the user), exp, and an
// optional dev (the device); svc marks a service (docs/protocol.md,
// "Services").
type claims struct {
	Dev string `json:"dev,omitempty"`
	Svc bool   `json:"svc,omitempty"`
	jwt.RegisteredClaims
}

// IssueToken signs an HS256 token for user and device, valid for ttl. An
// empty device issues a token without `dev` (the default device). It returns
// an error wrapping chatd.ErrInvalid for a bad user, device or ttl.
func IssueToken(secret []byte, user, device string, ttl time.Duration) (string, error) {
	return issueToken(secret, user, device, ttl, false)
}

func issueToken(secret []byte, user, device string, ttl time.Duration, service bool) (string, error) {
	switch {
	case len(secret) == 0:
		return "", fmt.Errorf("issue token: empty secret: %w", chatd.ErrInvalid)
	case !chatd.ValidUserID(user):
		return "", fmt.Errorf("issue token: user %q: %w", user, chatd.ErrInvalid)
	case device != "" && !chatd.ValidDeviceID(device):
		return "", fmt.Errorf("issue token: device %q: %w", device, chatd.ErrInvalid)
	case ttl < time.Second:
		// A token's times are whole seconds: less would expire as issued.
		return "", fmt.Errorf("issue token: ttl %v: give 1s or more, e.g. 24h: %w", ttl, chatd.ErrInvalid)
	}
	now := time.Now()
	c := claims{Dev: device, Svc: service, RegisteredClaims: jwt.RegisteredClaims{
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
	return newVerifier(secret, nil, time.Now).verify(token)
}

// asymmetricAlgs are the algorithms a JWKS key may sign with.
var asymmetricAlgs = []string{
	jwt.SigningMethodRS256.Alg(), jwt.SigningMethodES256.Alg(), jwt.SigningMethodEdDSA.Alg(),
}

// verifier is VerifyToken with its parsers built once, a clock to move in
// tests and, when configured, the identity provider's keys.
type verifier struct {
	secret []byte
	hs     *jwt.Parser
	// keys is nil without a JWKS URL; then jwksParser is nil too, and every
	// token goes through hs, exactly as before JWKS support.
	keys       *jwks
	jwksParser *jwt.Parser
}

func newVerifier(secret []byte, keys *jwks, now func() time.Time) *verifier {
	v := &verifier{
		secret: secret,
		hs: jwt.NewParser(
			jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
			jwt.WithExpirationRequired(),
			jwt.WithTimeFunc(now),
		),
		keys: keys,
	}
	if keys != nil {
		// Two parsers, not one accepting all four algorithms: each pins the
		// algorithms its keys are for, and iss/aud bind the provider's
		// tokens only (chatd's own HS256 tokens carry neither).
		opts := []jwt.ParserOption{
			jwt.WithValidMethods(asymmetricAlgs),
			jwt.WithExpirationRequired(),
			jwt.WithTimeFunc(now),
		}
		if keys.cfg.Issuer != "" {
			opts = append(opts, jwt.WithIssuer(keys.cfg.Issuer))
		}
		if keys.cfg.Audience != "" {
			opts = append(opts, jwt.WithAudience(keys.cfg.Audience))
		}
		v.jwksParser = jwt.NewParser(opts...)
	}
	return v
}

func (v *verifier) verify(token string) (Identity, error) {
	if token == "" {
		return Identity{}, fmt.Errorf("no token: %w", ErrUnauthorized)
	}
	if len(token) > maxTokenBytes {
		return Identity{}, fmt.Errorf("token longer than %d bytes: %w", maxTokenBytes, ErrUnauthorized)
	}
	if v.keys != nil && headerAlg(token) != jwt.SigningMethodHS256.Alg() {
		return v.verifyJWKS(token)
	}
	var c claims
	_, err := v.hs.ParseWithClaims(token, &c, func(*jwt.Token) (any, error) { return v.secret, nil })
	if err != nil {
		return Identity{}, fmt.Errorf("%w: %w", ErrUnauthorized, err)
	}
	id, err := identityOf(c.Subject, c.Dev, c.ExpiresAt.Time)
	if err != nil {
		return Identity{}, err
	}
	id.Service = c.Svc
	return id, nil
}

// verifyJWKS checks a token signed by a key of the JWK Set, selected by kid.
// The user comes from the configured claim.
func (v *verifier) verifyJWKS(token string) (Identity, error) {
	c := jwt.MapClaims{}
	_, err := v.jwksParser.ParseWithClaims(token, c, func(t *jwt.Token) (any, error) {
		kid, _ := t.Header["kid"].(string)
		return v.keys.key(kid, t.Method.Alg())
	})
	if err != nil {
		return Identity{}, fmt.Errorf("%w: %w", ErrUnauthorized, err)
	}
	user, ok := c[v.keys.cfg.UserClaim].(string)
	if !ok {
		return Identity{}, fmt.Errorf("claim %q is not a string: %w", v.keys.cfg.UserClaim, ErrUnauthorized)
	}
	dev, ok := c["dev"].(string)
	if _, present := c["dev"]; present && !ok {
		return Identity{}, fmt.Errorf("dev is not a string: %w", ErrUnauthorized)
	}
	exp, err := c.GetExpirationTime()
	if err != nil || exp == nil {
		return Identity{}, fmt.Errorf("no exp: %w", ErrUnauthorized)
	}
	svc, err := serviceClaim(c, v.keys.cfg.ServiceClaim)
	if err != nil {
		return Identity{}, err
	}
	id, err := identityOf(user, dev, exp.Time)
	if err != nil {
		return Identity{}, err
	}
	id.Service = svc
	return id, nil
}

// identityOf applies chatd's id rules to a verified token's user and device,
// whichever key signed it.
func identityOf(user, dev string, exp time.Time) (Identity, error) {
	if !chatd.ValidUserID(user) {
		return Identity{}, fmt.Errorf("user %q is not a user id: %w", user, ErrUnauthorized)
	}
	if dev == "" {
		dev = chatd.DefaultDevice
	} else if !chatd.ValidDeviceID(dev) {
		return Identity{}, fmt.Errorf("dev %q is not a device id: %w", dev, ErrUnauthorized)
	}
	return Identity{User: user, Device: dev, Expires: exp}, nil
}

// headerAlg is the alg a token's header claims, unverified, or "" when the
// header does not decode. It only picks the parser; each parser then pins
// its own algorithms and verifies.
func headerAlg(token string) string {
	head, _, ok := strings.Cut(token, ".")
	if !ok {
		return ""
	}
	raw, err := base64.RawURLEncoding.DecodeString(head)
	if err != nil {
		return ""
	}
	var h struct {
		Alg string `json:"alg"`
	}
	if json.Unmarshal(raw, &h) != nil {
		return ""
	}
	return h.Alg
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
