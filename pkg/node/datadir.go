package node

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
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
