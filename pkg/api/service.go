package api

import (
	"fmt"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Defaults of a service identity's token buckets (Config.Service): four
// times a person's WebSocket budget, ten times their REST one, because one
// bot or app backend speaks for many people.
const (
	DefaultServiceRatePerSecond = 200
	DefaultServiceRateBurst     = 400
)

// IssueServiceToken is IssueToken for a service identity: the token also
// carries `svc: true`, so the identity it verifies to has Service set. The
// name follows the user id rule and shares the users' namespace: a service
// is a chat member under that id.
func IssueServiceToken(secret []byte, name, device string, ttl time.Duration) (string, error) {
	return issueToken(secret, name, device, ttl, true)
}

// serviceClaim reads the claim that marks a provider token as a service's:
// absent or false is a person, true a service, anything else a token the
// provider did not mean, refused rather than guessed at.
func serviceClaim(c jwt.MapClaims, name string) (bool, error) {
	v, present := c[name]
	if !present {
		return false, nil
	}
	svc, ok := v.(bool)
	if !ok {
		return false, fmt.Errorf("claim %q is not a boolean: %w", name, ErrUnauthorized)
	}
	return svc, nil
}

// limitsFor is the per-connection limits of a session of id: a service's
// token bucket is Config.Service, the rest as for a person.
func (c *Config) limitsFor(id Identity) Limits {
	l := c.Limits
	if id.Service {
		l.RatePerSecond, l.RateBurst = c.Service.RatePerSecond, c.Service.Burst
	}
	return l
}

// restLimiter is the REST token bucket id is charged to: services have their
// own, so a busy app backend never shares a bucket size with people.
func (s *Server) restLimiter(id Identity) *userLimiter {
	if id.Service {
		return s.serviceREST
	}
	return s.rest
}
