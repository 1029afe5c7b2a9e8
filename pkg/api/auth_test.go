package api_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/pkg/api"
	"github.com/golang-jwt/jwt/v5"
)

var testSecret = []byte("0123456789abcdef0123456789abcdef")

// signed signs claims with method and key, for hand-made bad tokens.
func signed(t *testing.T, method jwt.SigningMethod, key any, claims jwt.MapClaims) string {
	t.Helper()
	s, err := jwt.NewWithClaims(method, claims).SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestIssueAndVerifyToken(t *testing.T) {
	tok, err := api.IssueToken(testSecret, "alice", "phone", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	got, err := api.VerifyToken(testSecret, tok)
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Until(got.Expires); d <= 59*time.Minute || d > time.Hour {
		t.Errorf("Expires in %v, want about an hour", d)
	}
	if want := (api.Identity{User: "alice", Device: "phone", Expires: got.Expires}); got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
	tok, err = api.IssueToken(testSecret, "bob", "", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	got, err = api.VerifyToken(testSecret, tok)
	if err != nil {
		t.Fatal(err)
	}
	if got.Device != chatd.DefaultDevice {
		t.Errorf("device without dev claim: got %q, want %q", got.Device, chatd.DefaultDevice)
	}
}

func TestIssueTokenRejectsBadInput(t *testing.T) {
	tests := []struct {
		name         string
		secret       []byte
		user, device string
		ttl          time.Duration
	}{
		{"empty secret", nil, "alice", "", time.Hour},
		{"bad user", testSecret, "al ice", "", time.Hour},
		{"empty user", testSecret, "", "", time.Hour},
		{"bad device", testSecret, "alice", "ph/one", time.Hour},
		{"zero ttl", testSecret, "alice", "", 0},
		// exp and iat are whole seconds: it would expire as it is issued.
		{"ttl under a second", testSecret, "alice", "", 999 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := api.IssueToken(tt.secret, tt.user, tt.device, tt.ttl); !errors.Is(err, chatd.ErrInvalid) {
				t.Errorf("err = %v, want ErrInvalid", err)
			}
		})
	}
}

// badTokens are the contract's 401 cases; the HTTP tests reuse them.
func badTokens(t *testing.T) map[string]string {
	t.Helper()
	exp := time.Now().Add(time.Hour).Unix()
	none := signed(t, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, jwt.MapClaims{"sub": "alice", "exp": exp})
	hs512 := signed(t, jwt.SigningMethodHS512, testSecret, jwt.MapClaims{"sub": "alice", "exp": exp})
	valid := signed(t, jwt.SigningMethodHS256, testSecret, jwt.MapClaims{"sub": "alice", "exp": exp})
	return map[string]string{
		"missing":        "",
		"garbage":        "not.a.token",
		"expired":        signed(t, jwt.SigningMethodHS256, testSecret, jwt.MapClaims{"sub": "alice", "exp": time.Now().Add(-time.Minute).Unix()}),
		"wrong secret":   signed(t, jwt.SigningMethodHS256, []byte("another-secret-another-secret!!"), jwt.MapClaims{"sub": "alice", "exp": exp}),
		"alg none":       none,
		"alg HS512":      hs512,
		"no exp":         signed(t, jwt.SigningMethodHS256, testSecret, jwt.MapClaims{"sub": "alice"}),
		"bad sub":        signed(t, jwt.SigningMethodHS256, testSecret, jwt.MapClaims{"sub": "al ice", "exp": exp}),
		"long sub":       signed(t, jwt.SigningMethodHS256, testSecret, jwt.MapClaims{"sub": strings.Repeat("a", 65), "exp": exp}),
		"no sub":         signed(t, jwt.SigningMethodHS256, testSecret, jwt.MapClaims{"exp": exp}),
		"bad dev":        signed(t, jwt.SigningMethodHS256, testSecret, jwt.MapClaims{"sub": "alice", "dev": "a/b", "exp": exp}),
		"numeric dev":    signed(t, jwt.SigningMethodHS256, testSecret, jwt.MapClaims{"sub": "alice", "dev": 7, "exp": exp}),
		"not yet valid":  signed(t, jwt.SigningMethodHS256, testSecret, jwt.MapClaims{"sub": "alice", "exp": exp, "nbf": exp - 60}),
		"tampered":       tamper(valid),
		"oversized":      strings.Repeat("a", 3000),
		"header-swapped": strings.Replace(valid, strings.Split(valid, ".")[0], strings.Split(none, ".")[0], 1),
	}
}

// tamper changes one character in the middle of tok's signature. Not the
// last ones: the last character of a base64url HS256 signature carries two
// padding bits that decoding ignores, and replacing the last two with "xx"
// left the signature valid for about 1 token in 1,000 (which failed CI).
func tamper(tok string) string {
	b := []byte(tok)
	i := len(b) - 10
	if b[i] == 'A' {
		b[i] = 'B'
	} else {
		b[i] = 'A'
	}
	return string(b)
}

func TestVerifyTokenFailures(t *testing.T) {
	for name, tok := range badTokens(t) {
		t.Run(name, func(t *testing.T) {
			if id, err := api.VerifyToken(testSecret, tok); !errors.Is(err, api.ErrUnauthorized) {
				t.Errorf("got %+v, %v; want ErrUnauthorized", id, err)
			}
		})
	}
}
