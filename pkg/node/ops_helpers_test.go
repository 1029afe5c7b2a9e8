package node_test

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chatd/chatd/internal/testpg"
	"github.com/chatd/chatd/pkg/api/apitest"
	"github.com/chatd/chatd/pkg/node"
	"github.com/fasthttp/websocket"
)

const opsSecret = "ops-test-secret-0123456789"

// externalConfig is a node on its own fresh database and the NATS at url.
func externalConfig(t *testing.T, url, id string) node.Config {
	t.Helper()
	return node.Config{
		DatabaseURL: testpg.NewDatabase(t), NATSURL: url, JWTSecret: opsSecret, NodeID: id,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
}

func opsToken(t *testing.T, user string) string {
	t.Helper()
	return apitest.Token(t, []byte(opsSecret), user, "d1")
}

// restCall makes a REST call as user against base (http or https, with
// client for https) and returns the status and JSON body.
func restCall(t *testing.T, client *http.Client, base, user, method, path string, body any) (int, map[string]any) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		raw, _ := json.Marshal(body)
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, base+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+opsToken(t, user))
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	var out map[string]any
	raw, _ := io.ReadAll(resp.Body)
	_ = json.Unmarshal(raw, &out)
	return resp.StatusCode, out
}

// mustDirect makes (or finds) the direct chat of a and b on base.
func mustDirect(t *testing.T, base, a, b string) string {
	t.Helper()
	st, out := restCall(t, http.DefaultClient, base, a, "POST", "/api/chats/direct", map[string]any{"user": b})
	if st != 200 && st != 201 {
		t.Fatalf("direct chat %s-%s: %d %v", a, b, st, out)
	}
	return out["id"].(string)
}

// wsClient is a test WebSocket session.
type wsClient struct {
	t    *testing.T
	conn *websocket.Conn
}

// mustWS opens a session for user at wsURL (ws:// or wss://) with dialer
// (nil: the default) and reads its hello.
func mustWS(t *testing.T, dialer *websocket.Dialer, wsURL, user string) *wsClient {
	t.Helper()
	if dialer == nil {
		dialer = websocket.DefaultDialer
	}
	conn, _, err := dialer.Dial(wsURL+"?token="+opsToken(t, user), nil)
	if err != nil {
		t.Fatalf("dial %s as %s: %v", wsURL, user, err)
	}
	t.Cleanup(func() { conn.Close() })
	c := &wsClient{t: t, conn: conn}
	if f := c.next(5 * time.Second); f == nil || f["type"] != "hello" {
		t.Fatalf("first frame %v, want hello", f)
	}
	return c
}

// next reads one frame within d; nil when none came.
func (c *wsClient) next(d time.Duration) map[string]any {
	c.t.Helper()
	_ = c.conn.SetReadDeadline(time.Now().Add(d))
	_, b, err := c.conn.ReadMessage()
	if err != nil {
		var ne net.Error
		if strings.Contains(err.Error(), "timeout") || (errors.As(err, &ne) && ne.Timeout()) {
			return nil
		}
		c.t.Fatalf("read frame: %v", err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		c.t.Fatalf("frame %q: %v", b, err)
	}
	return m
}

// waitFor reads frames until one matches or d passes; it returns the frames
// read, and fails t if none matched.
func (c *wsClient) waitFor(d time.Duration, what string, match func(map[string]any) bool) {
	c.t.Helper()
	deadline := time.Now().Add(d)
	var seen []map[string]any
	for time.Now().Before(deadline) {
		f := c.next(time.Until(deadline))
		if f == nil {
			break
		}
		if match(f) {
			return
		}
		seen = append(seen, f)
	}
	c.t.Fatalf("no %s within %v (frames: %v)", what, d, seen)
}

func (c *wsClient) send(v any) {
	c.t.Helper()
	if err := c.conn.WriteJSON(v); err != nil {
		c.t.Fatal(err)
	}
}

// testCA is a certificate authority made for one test.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func mustCA(t *testing.T, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// issue signs a certificate for cn, valid for 127.0.0.1 and localhost, as a
// server and client certificate, and returns its PEM cert and key.
func (ca *testCA) issue(t *testing.T, cn string) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder})
}

// pool is a cert pool holding only ca.
func (ca *testCA) pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.cert)
	return p
}

// keyPair parses a PEM pair into a tls.Certificate.
func keyPair(t *testing.T, certPEM, keyPEM []byte) tls.Certificate {
	t.Helper()
	c, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// writeFile writes data to name in dir (mode 0600) and returns its path.
func writeFile(t *testing.T, dir, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
