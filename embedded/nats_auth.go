package embedded

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"

	"github.com/nats-io/nkeys"
)

// loadNkey reads the user nkey seed kept in path, generating it (mode 0600)
// on first use, so the nats CLI an operator pointed at it keeps working
// across restarts. A file others may read is tightened to 0600: whoever
// holds the seed can forge envelopes and purge the stream.
func loadNkey(path string) (nkeys.KeyPair, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return createNkey(path)
	}
	if err != nil {
		return nil, fmt.Errorf("read nats nkey: %w", err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("nats nkey: %w", err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		if err := os.Chmod(path, 0o600); err != nil {
			return nil, fmt.Errorf("nats nkey %s is readable by others and cannot be made 0600: %w", path, err)
		}
	}
	kp, err := nkeys.ParseDecoratedNKey(b)
	if err != nil {
		return nil, fmt.Errorf("nats nkey %s holds no user seed (%v); remove it and chatd makes a new one", path, err)
	}
	if pub, err := kp.PublicKey(); err != nil || !nkeys.IsValidPublicUserKey(pub) {
		return nil, fmt.Errorf("nats nkey %s is not a user seed; remove it and chatd makes a new one", path)
	}
	return kp, nil
}

// createNkey generates a user nkey and writes its seed to path. O_EXCL: two
// starts racing on one data dir must not each keep a different key.
func createNkey(path string) (nkeys.KeyPair, error) {
	kp, err := nkeys.CreateUser()
	if err != nil {
		return nil, fmt.Errorf("generate nats nkey: %w", err)
	}
	seed, err := kp.Seed()
	if err != nil {
		return nil, fmt.Errorf("generate nats nkey: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("write nats nkey: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return loadNkey(path)
	}
	if err != nil {
		return nil, fmt.Errorf("write nats nkey: %w", err)
	}
	_, err = f.Write(append(seed, '\n'))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(path)
		return nil, fmt.Errorf("write nats nkey %s: %w", path, err)
	}
	return kp, nil
}

// isLoopbackHost reports whether a listen host binds loopback only. An
// empty host or an unspecified address binds every interface; a name other
// than localhost may resolve anywhere, so it does not count.
func isLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
