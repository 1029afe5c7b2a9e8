package node_test

import (
	"crypto/tls"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chatd/chatd/pkg/node"
	"github.com/chatd/chatd/pkg/node/nodetest"
	"github.com/fasthttp/websocket"
)

// handshakeCN is the common name of the certificate the node presents.
func handshakeCN(t *testing.T, addr string, tc *tls.Config) string {
	t.Helper()
	conn, err := tls.Dial("tcp", addr, tc)
	if err != nil {
		t.Fatalf("TLS handshake with %s: %v", addr, err)
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0].Subject.CommonName
}

// --tls-cert/--tls-key: the node serves HTTPS and WSS with the files'
// certificate, and after the files change ReloadTLS (SIGHUP in cmd/chatd)
// makes new handshakes see the new one while open WebSockets stay up.
func TestTLSListenerAndReload(t *testing.T) {
	ca := mustCA(t, "chatd test CA")
	dir := t.TempDir()
	certA, keyA := ca.issue(t, "cert A")
	cfg := externalConfig(t, nodetest.NATS(t, t.TempDir(), "127.0.0.1:0").ClientURL(), "n1")
	cfg.TLSCertFile, cfg.TLSKeyFile = writeFile(t, dir, "tls.crt", certA), writeFile(t, dir, "tls.key", keyA)
	n := nodetest.Run(t, cfg)
	if !strings.HasPrefix(n.URL(), "https://") {
		t.Fatalf("URL %s, want https", n.URL())
	}
	tc := &tls.Config{RootCAs: ca.pool(), ServerName: "127.0.0.1"}
	if got := handshakeCN(t, n.Addr(), tc); got != "cert A" {
		t.Fatalf("handshake: got certificate %q, want cert A", got)
	}

	// REST and WSS over TLS, a message delivered through it.
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: tc}}
	t.Cleanup(client.CloseIdleConnections)
	st, out := restCall(t, client, n.URL(), "alice", "POST", "/api/chats/direct", map[string]any{"user": "bob"})
	if st != 201 {
		t.Fatalf("REST over TLS: %d %v, want 201", st, out)
	}
	chat := out["id"].(string)
	dialer := &websocket.Dialer{TLSClientConfig: tc, HandshakeTimeout: 5 * time.Second}
	wss := "wss://" + n.Addr() + "/ws"
	bob := mustWS(t, dialer, wss, "bob")
	alice := mustWS(t, dialer, wss, "alice")
	alice.send(map[string]any{"type": "send", "chat": chat, "cid": "c1", "body": "over wss"})
	bob.waitFor(5*time.Second, "the message over WSS", func(f map[string]any) bool { return f["type"] == "msg" && f["body"] == "over wss" })

	// A bad pair leaves the served certificate alone.
	writeFile(t, dir, "tls.key", []byte("not a key"))
	if err := n.ReloadTLS(); err == nil || !strings.Contains(err.Error(), "--tls-key") {
		t.Fatalf("reload with a bad key: got %v, want an error naming --tls-key", err)
	}
	if got := handshakeCN(t, n.Addr(), tc); got != "cert A" {
		t.Fatalf("after a failed reload: got certificate %q, want cert A still", got)
	}

	certB, keyB := ca.issue(t, "cert B")
	writeFile(t, dir, "tls.crt", certB)
	writeFile(t, dir, "tls.key", keyB)
	if got := handshakeCN(t, n.Addr(), tc); got != "cert A" {
		t.Fatalf("files replaced, not reloaded: got certificate %q, want cert A", got)
	}
	if err := n.ReloadTLS(); err != nil {
		t.Fatalf("reload: %v", err)
	}
	if got := handshakeCN(t, n.Addr(), tc); got != "cert B" {
		t.Fatalf("after reload: got certificate %q, want cert B", got)
	}
	// The WebSockets opened under cert A still deliver.
	alice.send(map[string]any{"type": "send", "chat": chat, "cid": "c2", "body": "after reload"})
	bob.waitFor(5*time.Second, "a message after the reload", func(f map[string]any) bool { return f["type"] == "msg" && f["body"] == "after reload" })
	mustWS(t, dialer, wss, "carol") // a new WSS session under cert B
}

// A plain-HTTP node has nothing to reload, and exports its build.
func TestPlainNodeReloadAndBuildInfo(t *testing.T) {
	n := nodetest.Run(t, externalConfig(t, nodetest.NATS(t, t.TempDir(), "127.0.0.1:0").ClientURL(), "n1"))
	if err := n.ReloadTLS(); !errors.Is(err, node.ErrNoTLS) {
		t.Fatalf("got %v, want ErrNoTLS", err)
	}
	if got := nodetest.Metric(t, n.Node, "chatd_build_info"); got != 1 {
		t.Fatalf("chatd_build_info %v, want 1", got)
	}
}
