package node

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// persistentValue returns the value kept in dataDir/name, generating and
// storing a random one (n bytes, hex) on first use. It is how embedded mode
// keeps its JWT secret and node id stable across restarts.
func persistentValue(dataDir, name string, n int) (string, error) {
	path := filepath.Join(dataDir, name)
	b, err := os.ReadFile(path)
	if err == nil {
		if v := strings.TrimSpace(string(b)); v != "" {
			return v, nil
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return "", fmt.Errorf("create data dir: %w", err)
	}
	raw := make([]byte, n)
	if _, err := rand.Read(raw); err != nil {
		return "", err
	}
	v := hex.EncodeToString(raw)
	if err := os.WriteFile(path, []byte(v+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	return v, nil
}

// JWTSecret resolves the signing secret the way a node does: the configured
// one, else (embedded mode) the one generated in the data dir. `chatd token`
// uses it so its tokens verify against the running server.
func JWTSecret(cfg Config) ([]byte, error) {
	if cfg.JWTSecret != "" {
		return []byte(cfg.JWTSecret), nil
	}
	if cfg.DatabaseURL != "" {
		return nil, errors.New("no JWT secret: set --jwt-secret (CHATD_JWT_SECRET) to the same value on every node")
	}
	if cfg.DataDir == "" {
		return nil, errors.New("no JWT secret and no data dir to keep a generated one in")
	}
	v, err := persistentValue(cfg.DataDir, "jwt-secret", 32)
	if err != nil {
		return nil, fmt.Errorf("jwt secret: %w", err)
	}
	return []byte(v), nil
}

// NATSNkeyFile is where embedded mode keeps the nkey seed its NATS requires
// from every client (mode 0600): the nats CLI reads it with --nkey.
func NATSNkeyFile(dataDir string) string {
	return filepath.Join(dataDir, "nats-user.nk")
}

// lockFile is the file in the data dir that a node using the dir holds an
// exclusive lock on for its life, with its pid in it for the refusal a
// second node gets.
const lockFile = "chatd.lock"

// usesDataDir reports whether cfg keeps anything in its data dir: the
// managed PostgreSQL, the embedded NATS's store, or a generated node id.
func usesDataDir(cfg Config) bool {
	return cfg.DataDir != "" && (cfg.DatabaseURL == "" || cfg.NATSURL == "" || cfg.NodeID == "")
}

// lockDataDir takes dir's lock; release gives it back. A second chatd on the
// same data dir would otherwise wait on the first's PostgreSQL and fail
// saying to stop it, or share its node id; with the lock it fails at once,
// naming the process that holds the dir. The kernel drops the lock when its
// holder exits, a crash included, so nothing is left to clean up.
func lockDataDir(dir string) (release func(), err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create data dir: %w", err)
	}
	path := filepath.Join(dir, lockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder, _ := os.ReadFile(path)
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("data dir %s is in use by another chatd (pid %s): stop it, or give this one another --data-dir (CHATD_DATA_DIR)",
				dir, strings.TrimSpace(string(holder)))
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	// The pid is for the message above only; the lock is what counts.
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return func() { f.Close() }, nil
}
