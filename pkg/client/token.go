package client

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"time"
)

// tokenExp reads the `exp` claim of a JWT without verifying it: the client
// has no secret, and only needs to know when the server will stop honouring
// the token. The zero time means the token has no readable exp (not a JWT,
// or an opaque token), and so nothing to refresh ahead of.
func tokenExp(tok string) time.Time {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return time.Time{}
	}
	payload, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
	if err != nil {
		return time.Time{}
	}
	var claims struct {
		Exp json.Number `json:"exp"`
	}
	if err := json.Unmarshal(payload, &claims); err != nil {
		return time.Time{}
	}
	exp, err := claims.Exp.Float64()
	if err != nil || exp <= 0 {
		return time.Time{}
	}
	return time.Unix(int64(exp), 0)
}
