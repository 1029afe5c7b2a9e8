package node

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats.go"
)

// asyncAckTimeout bounds the wait for an async publish's ack on the node's
// JetStream context (the notifier's and the changes publisher's).
const asyncAckTimeout = 10 * time.Second

// NATSOptions are the credentials and TLS settings of the connection to an
// external NATS (Config.NATSURL). The embedded NATS ignores them: it
// authenticates its in-process clients with the data dir's nkey. At most one
// of CredsFile, NkeyFile and User may be set; zero values mean none.
type NATSOptions struct {
	// CredsFile is a NATS credentials file (user JWT and nkey seed), as
	// `nsc` writes for an operator-mode account (--nats-creds).
	CredsFile string
	// NkeyFile is an nkey seed file, for servers that list nkey users
	// (--nats-nkey).
	NkeyFile string
	// User and Password authenticate with a user listed in the server's
	// config (--nats-user, --nats-password). Password may be empty only
	// when User is too.
	User     string
	Password string
	// CAFile verifies the server's certificate; empty uses the system's
	// roots (--nats-ca). Setting it (or CertFile) turns TLS on.
	CAFile string
	// CertFile and KeyFile are this node's client certificate, for servers
	// that verify clients (--nats-cert, --nats-key); both or neither.
	CertFile string
	KeyFile  string
}

// check reports a setting that cannot work, naming the flag to fix.
func (o *NATSOptions) check(external bool) error {
	set := 0
	for _, v := range []string{o.CredsFile, o.NkeyFile, o.User} {
		if v != "" {
			set++
		}
	}
	switch {
	case set > 1:
		return errors.New("nats: set only one of --nats-creds, --nats-nkey and --nats-user")
	case o.Password != "" && o.User == "":
		return errors.New("nats: --nats-password needs --nats-user")
	case (o.CertFile == "") != (o.KeyFile == ""):
		return errors.New("nats: --nats-cert and --nats-key go together")
	case !external && (set > 0 || o.CAFile != "" || o.CertFile != ""):
		return errors.New("nats: the --nats-creds/--nats-nkey/--nats-user/--nats-ca/--nats-cert options are for an external NATS: set --nats-url too")
	}
	return nil
}

// authFlag names the flag that carries the connection's credentials, for
// error messages; "" when the connection is anonymous.
func (o *NATSOptions) authFlag() string {
	switch {
	case o.CredsFile != "":
		return "--nats-creds"
	case o.NkeyFile != "":
		return "--nats-nkey"
	case o.User != "":
		return "--nats-user/--nats-password"
	}
	return ""
}

// natsOptions turns the options into nats.go options. Files are read here,
// so a missing or malformed one fails the start naming its flag instead of
// surfacing later as a vague connection error.
func (o *NATSOptions) natsOptions() ([]nats.Option, error) {
	var opts []nats.Option
	switch {
	case o.CredsFile != "":
		raw, err := os.ReadFile(o.CredsFile)
		if err != nil {
			return nil, fmt.Errorf("--nats-creds: %w", err)
		}
		// nats.go reads the file again on every (re)connect, so a rotated
		// file is picked up; reading it now catches a wrong path at start.
		if _, err := jwt.ParseDecoratedJWT(raw); err != nil {
			return nil, fmt.Errorf("--nats-creds %s: no user JWT: %w", o.CredsFile, err)
		}
		if _, err := jwt.ParseDecoratedNKey(raw); err != nil {
			return nil, fmt.Errorf("--nats-creds %s: no nkey seed: %w", o.CredsFile, err)
		}
		opts = append(opts, nats.UserCredentials(o.CredsFile))
	case o.NkeyFile != "":
		opt, err := nats.NkeyOptionFromSeed(o.NkeyFile)
		if err != nil {
			return nil, fmt.Errorf("--nats-nkey %s: %w", o.NkeyFile, err)
		}
		opts = append(opts, opt)
	case o.User != "":
		opts = append(opts, nats.UserInfo(o.User, o.Password))
	}
	tc, err := o.tlsConfig()
	if err != nil {
		return nil, err
	}
	if tc != nil {
		opts = append(opts, nats.Secure(tc))
	}
	return opts, nil
}

// tlsConfig is the client TLS configuration, nil when neither a CA nor a
// client certificate is set (a tls:// URL then still uses the system roots).
func (o *NATSOptions) tlsConfig() (*tls.Config, error) {
	if o.CAFile == "" && o.CertFile == "" {
		return nil, nil
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if o.CAFile != "" {
		pem, err := os.ReadFile(o.CAFile)
		if err != nil {
			return nil, fmt.Errorf("--nats-ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--nats-ca %s: no PEM certificate in it", o.CAFile)
		}
		tc.RootCAs = pool
	}
	if o.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(o.CertFile, o.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("--nats-cert/--nats-key: %w", err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	return tc, nil
}

// connectExternalNATS connects to Config.NATSURL as this node. The
// connection is named chatd-<node id>, so `nats server report connections`
// tells the nodes apart.
//
// A short reconnect wait: after a server restart or a failover the relay and
// push resume within about a second, not after nats.go's default 2 s pause
// per server in the list. Pings every 5 s notice a silent partition within
// ~15 s (default: minutes), so the relay steps down and the node gives its
// sessions up in time.
func connectExternalNATS(url, nodeID string, o NATSOptions) (*nats.Conn, error) {
	opts, err := o.natsOptions()
	if err != nil {
		return nil, fmt.Errorf("connect to nats: %w", err)
	}
	opts = append(opts, nats.Name(natsConnName(nodeID)), nats.MaxReconnects(-1),
		nats.ReconnectWait(250*time.Millisecond),
		nats.PingInterval(5*time.Second), nats.MaxPingsOutstanding(3))
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		return nil, fmt.Errorf("connect to nats: %w (%s)", err, natsHint(err, o))
	}
	return nc, nil
}

// natsConnName is the name the node's NATS connection carries.
func natsConnName(nodeID string) string { return "chatd-" + nodeID }

// natsHint says which flag to look at for a failed connection.
func natsHint(err error, o NATSOptions) string {
	msg := strings.ToLower(err.Error())
	switch {
	case errors.Is(err, nats.ErrAuthorization) || errors.Is(err, nats.ErrAuthExpired) ||
		strings.Contains(msg, "authorization") || strings.Contains(msg, "authentication"):
		if f := o.authFlag(); f != "" {
			return "the server refused the credentials: check " + f
		}
		return "the server wants credentials: set --nats-creds, --nats-nkey or --nats-user"
	case strings.Contains(msg, "x509") || strings.Contains(msg, "tls") || strings.Contains(msg, "certificate"):
		return "TLS failed: check --nats-ca, --nats-cert and --nats-key against the server's TLS settings"
	}
	return "is NATS up and reachable? check --nats-url / CHATD_NATS_URL"
}
