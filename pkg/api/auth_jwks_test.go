package api_test

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/chatd/chatd/internal/testwait"
	"github.com/chatd/chatd/pkg/api"
	"github.com/chatd/chatd/pkg/api/apitest"
	"github.com/fasthttp/websocket"
	"github.com/golang-jwt/jwt/v5"
	"github.com/prometheus/client_golang/prometheus"
)

const (
	testIssuer   = "https://idp.test"
	testAudience = "chatd"
)

// idp is an identity provider: signing keys and the JWKS endpoint serving
// their public halves, on 127.0.0.1.
type idp struct {
	t    *testing.T
	srv  *httptest.Server
	mu   sync.Mutex
	keys map[string]crypto.Signer // guarded by mu; by kid, all published
}

func mustIDP(t *testing.T) *idp {
	t.Helper()
	p := &idp{t: t, keys: map[string]crypto.Signer{}}
	p.srv = httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(p.srv.Close)
	return p
}

func (p *idp) serve(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	defer p.mu.Unlock()
	set := jwkset.NewMemoryStorage()
	for kid, k := range p.keys {
		j, err := jwkset.NewJWKFromKey(k.Public(), jwkset.JWKOptions{Metadata: jwkset.JWKMetadataOptions{KID: kid, USE: jwkset.UseSig}})
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		if err := set.KeyWrite(r.Context(), j); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
	}
	raw, err := set.JSONPublic(r.Context())
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(raw)
}

// add publishes a new key of kind ("RS256", "ES256" or "EdDSA") under kid.
func (p *idp) add(kid, kind string) crypto.Signer {
	p.t.Helper()
	k := newKey(p.t, kind)
	p.mu.Lock()
	p.keys[kid] = k
	p.mu.Unlock()
	return k
}

func newKey(t *testing.T, kind string) crypto.Signer {
	t.Helper()
	var k crypto.Signer
	var err error
	switch kind {
	case "RS256":
		k, err = rsa.GenerateKey(rand.Reader, 2048)
	case "ES256":
		k, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case "EdDSA":
		_, k, err = ed25519.GenerateKey(rand.Reader)
	default:
		t.Fatalf("unknown key kind %q", kind)
	}
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// sign signs claims with key under kid, using the key's algorithm.
func sign(t *testing.T, key crypto.Signer, kid string, claims jwt.MapClaims) string {
	t.Helper()
	var m jwt.SigningMethod
	switch key.(type) {
	case *rsa.PrivateKey:
		m = jwt.SigningMethodRS256
	case *ecdsa.PrivateKey:
		m = jwt.SigningMethodES256
	case ed25519.PrivateKey:
		m = jwt.SigningMethodEdDSA
	}
	tok := jwt.NewWithClaims(m, claims)
	tok.Header["kid"] = kid
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// idpClaims are a good provider token's claims for user.
func idpClaims(user string) jwt.MapClaims {
	return jwt.MapClaims{"sub": user, "exp": time.Now().Add(time.Hour).Unix(), "iss": testIssuer, "aud": testAudience}
}

func with(c jwt.MapClaims, k string, v any) jwt.MapClaims {
	out := jwt.MapClaims{}
	for kk, vv := range c {
		out[kk] = vv
	}
	if v == nil {
		delete(out, k)
	} else {
		out[k] = v
	}
	return out
}

// mustJWKSEnv is mustEnv trusting p's keys, with iss and aud checks.
func mustJWKSEnv(t *testing.T, p *idp, opts ...func(*api.JWKSConfig)) *env {
	t.Helper()
	return mustEnv(t, func(c *api.Config) {
		c.JWKS = api.JWKSConfig{URL: p.srv.URL, Issuer: testIssuer, Audience: testAudience}
		for _, o := range opts {
			o(&c.JWKS)
		}
	})
}

// wantUpgrade401 dials /ws with tok and wants a plain HTTP 401.
func (e *env) wantUpgrade401(t *testing.T, tok string) {
	t.Helper()
	conn, resp, err := websocket.DefaultDialer.Dial(e.ws+"?token="+tok, nil)
	checkUpgrade(t, e.ws+"?token="+tok, nil, resp)
	if err == nil {
		conn.Close()
		t.Fatal("upgrade succeeded, want 401")
	}
	if resp == nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("upgrade: %v %v, want 401", resp, err)
	}
}

func TestJWKSTokensAccepted(t *testing.T) {
	t.Parallel()
	p := mustIDP(t)
	keys := map[string]crypto.Signer{}
	for _, alg := range []string{"RS256", "ES256", "EdDSA"} {
		keys[alg] = p.add("k-"+alg, alg)
	}
	e := mustJWKSEnv(t, p)
	for alg, key := range keys {
		t.Run(alg, func(t *testing.T) {
			tok := sign(t, key, "k-"+alg, with(idpClaims("alice"), "dev", "phone"))
			if got, body, _ := e.callToken(t, tok, "GET", "/api/chats", nil); got != http.StatusOK {
				t.Fatalf("REST: got %d %v, want 200", got, body)
			}
			e.dialToken(t, tok)
		})
	}
}

func TestJWKSHS256StillAccepted(t *testing.T) {
	t.Parallel()
	p := mustIDP(t)
	p.add("k1", "ES256")
	e := mustJWKSEnv(t, p)
	e.mustCall(t, http.StatusOK, "alice", "GET", "/api/chats", nil)
	e.dialToken(t, apitest.Token(t, testSecret, "alice", "phone"))
}

func TestJWKSTokenFailures(t *testing.T) {
	t.Parallel()
	p := mustIDP(t)
	rsaKey := p.add("rsa", "RS256")
	p.add("ec", "ES256")
	e := mustJWKSEnv(t, p)
	good := idpClaims("alice")
	der, err := x509.MarshalPKIXPublicKey(rsaKey.Public())
	if err != nil {
		t.Fatal(err)
	}
	pemBytes := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
	hsWithKid := func(secret []byte) string {
		tok := jwt.NewWithClaims(jwt.SigningMethodHS256, good)
		tok.Header["kid"] = "rsa"
		s, err := tok.SignedString(secret)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	none, err := jwt.NewWithClaims(jwt.SigningMethodNone, good).SignedString(jwt.UnsafeAllowNoneSignatureType)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		tok  string
	}{
		{"wrong key", sign(t, newKey(t, "RS256"), "rsa", good)},
		{"unknown kid", sign(t, newKey(t, "RS256"), "nobody", good)},
		{"no kid", sign(t, rsaKey, "", good)},
		{"key of another type under kid", sign(t, newKey(t, "ES256"), "rsa", good)},
		{"expired", sign(t, rsaKey, "rsa", with(good, "exp", time.Now().Add(-time.Minute).Unix()))},
		{"no exp", sign(t, rsaKey, "rsa", with(good, "exp", nil))},
		{"not yet valid", sign(t, rsaKey, "rsa", with(good, "nbf", time.Now().Add(time.Hour).Unix()))},
		{"bad iss", sign(t, rsaKey, "rsa", with(good, "iss", "https://evil.test"))},
		{"no iss", sign(t, rsaKey, "rsa", with(good, "iss", nil))},
		{"bad aud", sign(t, rsaKey, "rsa", with(good, "aud", "other"))},
		{"user fails the charset rule", sign(t, rsaKey, "rsa", with(good, "sub", "al ice!"))},
		{"user not a string", sign(t, rsaKey, "rsa", with(good, "sub", 42))},
		{"bad dev", sign(t, rsaKey, "rsa", with(good, "dev", "ph one"))},
		{"alg none", none},
		{"HS256 with the public key PEM as secret", hsWithKid(pemBytes)},
		{"HS256 with the public key DER as secret", hsWithKid(der)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, _, _ := e.callToken(t, tt.tok, "GET", "/api/chats", nil); got != http.StatusUnauthorized {
				t.Fatalf("REST: got %d, want 401", got)
			}
			e.wantUpgrade401(t, tt.tok)
		})
	}
}

func TestJWKSUserClaim(t *testing.T) {
	t.Parallel()
	p := mustIDP(t)
	key := p.add("k1", "EdDSA")
	e := mustJWKSEnv(t, p, func(c *api.JWKSConfig) { c.UserClaim = "uid" })
	tok := sign(t, key, "k1", with(with(idpClaims("auth0|123"), "uid", "bob"), "dev", "laptop"))
	if got, body, _ := e.callToken(t, tok, "GET", "/api/chats", nil); got != http.StatusOK {
		t.Fatalf("uid bob: got %d %v, want 200", got, body)
	}
	bad := sign(t, key, "k1", with(idpClaims("bob"), "uid", "b o b"))
	if got, _, _ := e.callToken(t, bad, "GET", "/api/chats", nil); got != http.StatusUnauthorized {
		t.Fatalf("uid failing the charset rule: got %d, want 401", got)
	}
	noUID := sign(t, key, "k1", idpClaims("bob"))
	if got, _, _ := e.callToken(t, noUID, "GET", "/api/chats", nil); got != http.StatusUnauthorized {
		t.Fatalf("no uid claim: got %d, want 401", got)
	}
}

func TestJWKSKeyRotationPickedUpOnFirstUse(t *testing.T) {
	t.Parallel()
	p := mustIDP(t)
	p.add("old", "RS256")
	reg := prometheus.NewRegistry()
	e := mustEnv(t, func(c *api.Config) {
		c.JWKS = api.JWKSConfig{URL: p.srv.URL, Issuer: testIssuer, Audience: testAudience}
		c.Registry = reg
	})
	key := p.add("new", "ES256")
	tok := sign(t, key, "new", idpClaims("alice"))
	if got, body, _ := e.callToken(t, tok, "GET", "/api/chats", nil); got != http.StatusOK {
		t.Fatalf("token of a key added after start: got %d %v, want 200", got, body)
	}
	// Within the 30 s floor a second unknown kid does not refetch, so a
	// stream of made-up kids costs the provider one request.
	later := p.add("newer", "ES256")
	tok = sign(t, later, "newer", idpClaims("alice"))
	if got, _, _ := e.callToken(t, tok, "GET", "/api/chats", nil); got != http.StatusUnauthorized {
		t.Fatalf("second unknown kid within the refresh floor: got %d, want 401", got)
	}
	waitMetric(t, reg, "chatd_jwks_fetches_total", 1)
}

func TestJWKSInBandRefresh(t *testing.T) {
	t.Parallel()
	p := mustIDP(t)
	key := p.add("k1", "RS256")
	e := mustJWKSEnv(t, p)
	c := e.dialToken(t, sign(t, key, "k1", with(idpClaims("alice"), "dev", "phone")))
	exp := time.Now().Add(2 * time.Hour).Truncate(time.Second)
	c.refresh(sign(t, key, "k1", with(with(idpClaims("alice"), "dev", "phone"), "exp", exp.Unix())), exp)
	// An HS256 token for the same user and device refreshes it too.
	hs, hsExp := shortToken(t, "alice", "phone", time.Hour)
	c.refresh(hs, hsExp)
	// Another sub from the provider is refused.
	c.sendJSON(map[string]any{"type": "auth", "token": sign(t, key, "k1", with(idpClaims("mallory"), "dev", "phone"))})
	c.wantClose(4401)
}

func TestJWKSStartFailsWithoutAValidSet(t *testing.T) {
	t.Parallel()
	empty := mustIDP(t)
	notJSON := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("<html>")) }))
	t.Cleanup(notJSON.Close)
	missing := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(missing.Close)
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	tests := []struct{ name, url string }{
		{"no keys", empty.srv.URL},
		{"not JSON", notJSON.URL},
		{"404", missing.URL},
		{"nobody listening", closed.URL},
		{"not a URL", "::"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := api.New(api.Config{
				JWTSecret: testSecret, JWKS: api.JWKSConfig{URL: tt.url},
				Chats: nopChats{}, Ingest: nopIngest{}, Delivery: nopDelivery{}, Logger: quietLogger(),
			})
			if err == nil || !strings.Contains(err.Error(), "JWKS") {
				t.Fatalf("got %v, want a JWKS error", err)
			}
		})
	}
}

// The nop dependencies satisfy New's required fields; New fails before
// anything calls them.
type (
	nopChats    struct{ api.Chats }
	nopIngest   struct{ api.Ingester }
	nopDelivery struct{ api.Deliverer }
)

func TestWithoutJWKSOnlyHS256Verifies(t *testing.T) {
	t.Parallel()
	for _, alg := range []string{"RS256", "ES256", "EdDSA"} {
		tok := sign(t, newKey(t, alg), "k1", idpClaims("alice"))
		if _, err := api.VerifyToken(testSecret, tok); !errors.Is(err, api.ErrUnauthorized) {
			t.Errorf("%s without a JWKS: got %v, want ErrUnauthorized", alg, err)
		}
	}
}

func TestJWKSBackgroundRefreshDropsRevokedKey(t *testing.T) {
	t.Parallel()
	p := mustIDP(t)
	key := p.add("k1", "ES256")
	p.add("k2", "ES256")
	e := mustJWKSEnv(t, p, func(c *api.JWKSConfig) { c.RefreshInterval = 20 * time.Millisecond })
	tok := sign(t, key, "k1", idpClaims("alice"))
	if got, _, _ := e.callToken(t, tok, "GET", "/api/chats", nil); got != http.StatusOK {
		t.Fatalf("before revocation: got %d, want 200", got)
	}
	p.mu.Lock()
	delete(p.keys, "k1")
	p.mu.Unlock()
	testwait.For(t, 5*time.Second, "401 for a token of the revoked key", func() bool {
		got, _, _ := e.callToken(t, tok, "GET", "/api/chats", nil)
		return got == http.StatusUnauthorized
	})
}

// A full key rotation at the provider: the new kid appears and the old one
// is withdrawn in the same JWK Set change. The first token under the new kid
// makes chatd refetch the set (refresh on an unknown kid) and is accepted;
// from that refetch on the old kid is refused, without waiting for the
// hourly refresh.
func TestJWKSKeyRotationReplacesTheOldKey(t *testing.T) {
	t.Parallel()
	p := mustIDP(t)
	old := p.add("2026-11", "RS256")
	e := mustJWKSEnv(t, p)
	oldTok := sign(t, old, "2026-11", idpClaims("alice"))
	if got, body, _ := e.callToken(t, oldTok, "GET", "/api/chats", nil); got != http.StatusOK {
		t.Fatalf("before rotation, old kid: got %d %v, want 200", got, body)
	}

	p.mu.Lock()
	delete(p.keys, "2026-11")
	p.mu.Unlock()
	next := p.add("2026-12", "EdDSA")

	newTok := sign(t, next, "2026-12", idpClaims("alice"))
	if got, body, _ := e.callToken(t, newTok, "GET", "/api/chats", nil); got != http.StatusOK {
		t.Fatalf("after rotation, new kid: got %d %v, want 200 (refetch on unknown kid)", got, body)
	}
	if got, _, _ := e.callToken(t, oldTok, "GET", "/api/chats", nil); got != http.StatusUnauthorized {
		t.Fatalf("after rotation, withdrawn kid: got %d, want 401", got)
	}
	e.wantUpgrade401(t, oldTok)
}
