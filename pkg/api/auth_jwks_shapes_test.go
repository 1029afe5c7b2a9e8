package api_test

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/chatd/chatd/pkg/api"
	"github.com/golang-jwt/jwt/v5"
)

// rsaJWK is an RSA public key as identity providers publish it, written
// here by hand rather than by the JWK library chatd parses with.
func rsaJWK(t *testing.T, key *rsa.PrivateKey, kid, alg, use string, withCert bool) map[string]any {
	t.Helper()
	j := map[string]any{
		"kid": kid, "kty": "RSA", "alg": alg, "use": use,
		"n": base64.RawURLEncoding.EncodeToString(key.N.Bytes()),
		"e": base64.RawURLEncoding.EncodeToString(big.NewInt(int64(key.E)).Bytes()),
	}
	if withCert {
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "realm"},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour)}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
		if err != nil {
			t.Fatal(err)
		}
		s1, s256 := sha1.Sum(der), sha256.Sum256(der)
		j["x5c"] = []string{base64.StdEncoding.EncodeToString(der)}
		j["x5t"] = base64.RawURLEncoding.EncodeToString(s1[:])
		j["x5t#S256"] = base64.RawURLEncoding.EncodeToString(s256[:])
	}
	return j
}

// The sets providers publish carry more than the signing key: Keycloak's
// default realm publishes its RS256 key with its certificate chain (x5c,
// x5t, x5t#S256) and an RSA-OAEP encryption key beside it (use "enc"), and
// RFC 9068 access tokens (Keycloak, Okta, node-oidc-provider) say typ
// "at+jwt". chatd starts on such a set and takes both token types; the
// encryption key never verifies a token.
func TestJWKSProviderShapedSet(t *testing.T) {
	t.Parallel()
	sig, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	enc, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	set, err := json.Marshal(map[string]any{"keys": []any{
		rsaJWK(t, sig, "sig-1", "RS256", "sig", true),
		rsaJWK(t, enc, "enc-1", "RSA-OAEP", "enc", true),
	}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(set)
	}))
	t.Cleanup(srv.Close)
	e := mustEnv(t, func(c *api.Config) {
		c.JWKS = api.JWKSConfig{URL: srv.URL, Issuer: testIssuer, Audience: testAudience}
	})
	token := func(key *rsa.PrivateKey, kid, typ, user string) string {
		tok := jwt.NewWithClaims(jwt.SigningMethodRS256, idpClaims(user))
		tok.Header["kid"], tok.Header["typ"] = kid, typ
		s, err := tok.SignedString(key)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	for _, typ := range []string{"JWT", "at+jwt"} {
		tok := token(sig, "sig-1", typ, "alice")
		if got, body, _ := e.callToken(t, tok, "GET", "/api/chats", nil); got != http.StatusOK {
			t.Errorf("typ %s: REST %d %v, want 200", typ, got, body)
		}
		e.dialToken(t, tok)
	}
	if got, _, _ := e.callToken(t, token(enc, "enc-1", "JWT", "mallory"), "GET", "/api/chats", nil); got != http.StatusUnauthorized {
		t.Errorf("a token signed with the encryption key: %d, want 401", got)
	}
}
