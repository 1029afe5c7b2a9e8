package node

import (
	"crypto/tls"
	"errors"
	"fmt"
	"sync/atomic"
)

// certReloader serves the certificate of a cert/key file pair and reads the
// files again on reload, so a renewed certificate (certbot, cert-manager)
// takes effect without a restart that would drop every WebSocket. Handshakes
// in flight keep the pair they started with. Safe for concurrent use.
type certReloader struct {
	certFile, keyFile string
	cert              atomic.Pointer[tls.Certificate]
}

// newCertReloader loads the pair once; an unreadable pair fails the start.
func newCertReloader(certFile, keyFile string) (*certReloader, error) {
	r := &certReloader{certFile: certFile, keyFile: keyFile}
	if err := r.reload(); err != nil {
		return nil, err
	}
	return r, nil
}

// reload reads the pair again. On error the previous pair stays in use.
func (r *certReloader) reload() error {
	c, err := tls.LoadX509KeyPair(r.certFile, r.keyFile)
	if err != nil {
		return fmt.Errorf("--tls-cert %s / --tls-key %s: %w", r.certFile, r.keyFile, err)
	}
	r.cert.Store(&c)
	return nil
}

func (r *certReloader) getCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return r.cert.Load(), nil
}

// tlsConfig is the listener's configuration: HTTP/1.1 only, since
// fasthttp (and so the WebSocket upgrade) speaks no HTTP/2.
func (r *certReloader) tlsConfig() *tls.Config {
	return &tls.Config{
		GetCertificate: r.getCertificate,
		MinVersion:     tls.VersionTLS12,
		NextProtos:     []string{"http/1.1"},
	}
}

// ErrNoTLS is ReloadTLS's answer on a node that serves plain HTTP.
var ErrNoTLS = errors.New("node: no TLS certificate configured (--tls-cert)")

// ReloadTLS reads Config.TLSCertFile and TLSKeyFile again and serves the new
// certificate from the next handshake on; open connections keep theirs.
// cmd/chatd calls it on SIGHUP. On error the old certificate stays in use.
// Safe for concurrent use.
func (n *Node) ReloadTLS() error {
	if n.certs == nil {
		return ErrNoTLS
	}
	return n.certs.reload()
}
