package node_test

import (
	"crypto/tls"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chatd/chatd/pkg/node"
	"github.com/chatd/chatd/pkg/node/nodetest"
	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nkeys"
)

// mustNATSServer starts an in-process nats-server with JetStream, a TCP
// listener on loopback and the auth or TLS that configure sets.
func mustNATSServer(t *testing.T, configure func(*server.Options)) *server.Server {
	t.Helper()
	opts := &server.Options{
		Host: "127.0.0.1", Port: server.RANDOM_PORT, JetStream: true, StoreDir: t.TempDir(),
		NoSigs: true, NoLog: true,
	}
	configure(opts)
	srv, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	srv.Start()
	t.Cleanup(func() { srv.Shutdown(); srv.WaitForShutdown() })
	if !srv.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats-server not ready")
	}
	return srv
}

// natsAuthCase is a server set up for one auth method, with right and
// wrong client options for it.
type natsAuthCase struct {
	name   string
	server func(*server.Options)
	url    func(*server.Server) string
	right  node.NATSOptions
	wrong  []wrongNATS
}

// wrongNATS is a wrong client setting and the flag its failure must name.
type wrongNATS struct {
	opts node.NATSOptions
	flag string
}

func natsAuthCases(t *testing.T) []natsAuthCase {
	dir := t.TempDir()
	plain := func(s *server.Server) string { return s.ClientURL() }

	// nkey users.
	user, _ := nkeys.CreateUser()
	seed, _ := user.Seed()
	pub, _ := user.PublicKey()
	other, _ := nkeys.CreateUser()
	otherSeed, _ := other.Seed()

	// Operator mode: an operator, a JetStream-enabled account, a user of it.
	op, _ := nkeys.CreateOperator()
	opPub, _ := op.PublicKey()
	opClaims := jwt.NewOperatorClaims(opPub)
	acc, _ := nkeys.CreateAccount()
	accPub, _ := acc.PublicKey()
	accClaims := jwt.NewAccountClaims(accPub)
	accClaims.Limits.JetStreamLimits = jwt.JetStreamLimits{MemoryStorage: -1, DiskStorage: -1, Streams: -1, Consumer: -1}
	accJWT, err := accClaims.Encode(op)
	if err != nil {
		t.Fatal(err)
	}
	sys, _ := nkeys.CreateAccount()
	sysPub, _ := sys.PublicKey()
	sysJWT, _ := jwt.NewAccountClaims(sysPub).Encode(op)
	creds := func(issuer nkeys.KeyPair) []byte {
		u, _ := nkeys.CreateUser()
		upub, _ := u.PublicKey()
		ujwt, err := jwt.NewUserClaims(upub).Encode(issuer)
		if err != nil {
			t.Fatal(err)
		}
		useed, _ := u.Seed()
		out, err := jwt.FormatUserConfig(ujwt, useed)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	stranger, _ := nkeys.CreateAccount() // an account the server does not know

	// TLS with client certificates.
	ca := mustCA(t, "nats test CA")
	srvCert, srvKey := ca.issue(t, "nats")
	cliCert, cliKey := ca.issue(t, "chatd")
	otherCA := mustCA(t, "another CA")
	strangerCert, strangerKey := otherCA.issue(t, "chatd")

	return []natsAuthCase{
		{
			name:   "user and password",
			server: func(o *server.Options) { o.Users = []*server.User{{Username: "chatd", Password: "s3cret"}} },
			url:    plain,
			right:  node.NATSOptions{User: "chatd", Password: "s3cret"},
			wrong:  []wrongNATS{{node.NATSOptions{User: "chatd", Password: "guess"}, "--nats-user"}, {node.NATSOptions{}, "--nats-creds, --nats-nkey or --nats-user"}},
		},
		{
			name:   "nkey",
			server: func(o *server.Options) { o.Nkeys = []*server.NkeyUser{{Nkey: pub}} },
			url:    plain,
			right:  node.NATSOptions{NkeyFile: writeFile(t, dir, "user.nk", seed)},
			wrong:  []wrongNATS{{node.NATSOptions{NkeyFile: writeFile(t, dir, "other.nk", otherSeed)}, "--nats-nkey"}, {node.NATSOptions{NkeyFile: filepath.Join(dir, "missing.nk")}, "--nats-nkey"}},
		},
		{
			name: "creds",
			server: func(o *server.Options) {
				o.TrustedOperators = []*jwt.OperatorClaims{opClaims}
				r := &server.MemAccResolver{}
				_ = r.Store(accPub, accJWT)
				_ = r.Store(sysPub, sysJWT)
				o.AccountResolver = r
				o.SystemAccount = sysPub
			},
			url:   plain,
			right: node.NATSOptions{CredsFile: writeFile(t, dir, "chatd.creds", creds(acc))},
			wrong: []wrongNATS{{node.NATSOptions{CredsFile: writeFile(t, dir, "stranger.creds", creds(stranger))}, "--nats-creds"}},
		},
		{
			name: "TLS with a client certificate",
			server: func(o *server.Options) {
				o.TLSConfig = &tls.Config{
					Certificates: []tls.Certificate{keyPair(t, srvCert, srvKey)},
					ClientCAs:    ca.pool(), ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12,
				}
				o.TLSVerify = true
				o.TLSTimeout = 2
			},
			url: func(s *server.Server) string { return strings.Replace(s.ClientURL(), "nats://", "tls://", 1) },
			right: node.NATSOptions{
				CAFile:   writeFile(t, dir, "ca.pem", ca.pem),
				CertFile: writeFile(t, dir, "cli.pem", cliCert), KeyFile: writeFile(t, dir, "cli.key", cliKey),
			},
			wrong: []wrongNATS{
				// Trusts another CA, so the server's certificate fails.
				{node.NATSOptions{
					CAFile:   writeFile(t, dir, "other-ca.pem", otherCA.pem),
					CertFile: writeFile(t, dir, "cli2.pem", cliCert), KeyFile: writeFile(t, dir, "cli2.key", cliKey),
				}, "--nats-ca"},
				// A client certificate of another CA: the server refuses it.
				{node.NATSOptions{
					CAFile:   writeFile(t, dir, "ca2.pem", ca.pem),
					CertFile: writeFile(t, dir, "stranger.pem", strangerCert), KeyFile: writeFile(t, dir, "stranger.key", strangerKey),
				}, "--nats-cert"},
			},
		},
	}
}

// Each auth method of an external NATS: a node with the right credentials
// starts, and a message and a typing signal travel through NATS to another
// member (the relay's stream publish and the signal bus's round trip); with
// wrong ones the start fails with an error naming the flag to fix.
func TestExternalNATSAuth(t *testing.T) {
	for _, tc := range natsAuthCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			srv := mustNATSServer(t, tc.server)
			url := tc.url(srv)

			for _, w := range tc.wrong {
				bad := externalConfig(t, url, "bad")
				bad.NATS = w.opts
				if _, err := nodetest.Start(t, bad); err == nil {
					t.Fatalf("node with wrong credentials %+v started, want an error", w.opts)
				} else if t.Logf("wrong credentials: %v", err); !strings.Contains(err.Error(), w.flag) {
					t.Fatalf("wrong credentials: got %q, want it to name %s", err, w.flag)
				}
			}

			cfg := externalConfig(t, url, "n1")
			cfg.NATS = tc.right
			n := nodetest.Run(t, cfg)
			assertDelivery(t, n)
			if got := natsConnNames(t, srv); !strings.Contains(got, "chatd-n1") {
				t.Fatalf("connections on the server: %q, want one named chatd-n1", got)
			}
		})
	}
}

// assertDelivery sends a message and a typing signal from alice to bob on n
// and checks both arrive, and that the relay published the message to the
// stream (so it went through NATS, not only the local fast path).
func assertDelivery(t *testing.T, n *nodetest.Node) {
	t.Helper()
	chat := mustDirect(t, n.URL(), "alice", "bob")
	bob := mustWS(t, nil, "ws"+strings.TrimPrefix(n.URL(), "http")+"/ws", "bob")
	alice := mustWS(t, nil, "ws"+strings.TrimPrefix(n.URL(), "http")+"/ws", "alice")
	alice.send(map[string]any{"type": "send", "chat": chat, "cid": "c1", "body": "hi"})
	bob.waitFor(5*time.Second, "msg from alice", func(f map[string]any) bool { return f["type"] == "msg" && f["body"] == "hi" })
	alice.send(map[string]any{"type": "typing", "chat": chat})
	bob.waitFor(5*time.Second, "typing from alice", func(f map[string]any) bool { return f["type"] == "typing" && f["user"] == "alice" })
	deadline := time.Now().Add(5 * time.Second)
	for nodetest.Metric(t, n.Node, "chatd_relay_published_total") < 1 {
		if time.Now().After(deadline) {
			t.Fatal("the relay published nothing to the stream within 5 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// natsConnNames lists the names of the server's client connections.
func natsConnNames(t *testing.T, srv *server.Server) string {
	t.Helper()
	cz, err := srv.Connz(&server.ConnzOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range cz.Conns {
		names = append(names, c.Name)
	}
	return strings.Join(names, ",")
}
