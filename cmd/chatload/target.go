package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/chatd/chatd/pkg/api"
	"github.com/chatd/chatd/pkg/node"
)

// target is the chatd under load: a URL and a way to mint its tokens, plus
// the in-process node when chatload started one.
type target struct {
	url      string   // the first node: outbox view, metrics, report
	urls     []string // every node, clients spread over them
	secret   []byte
	embedded bool
	stop     func() error // stops the embedded node and removes a temp dir
}

// startTarget starts an embedded node (cfg.URL empty) or resolves the
// remote target's signing secret.
func startTarget(ctx context.Context, cfg *Config) (*target, error) {
	if cfg.URL != "" {
		return remoteTarget(cfg)
	}
	return embeddedTarget(ctx, cfg)
}

func remoteTarget(cfg *Config) (*target, error) {
	if cfg.JWTSecret == "" && cfg.DataDir == "" {
		return nil, errors.New("with --url, give --jwt-secret (or CHATD_JWT_SECRET) or the target's --data-dir")
	}
	secret, err := node.JWTSecret(node.Config{JWTSecret: cfg.JWTSecret, DataDir: cfg.DataDir})
	if err != nil {
		return nil, fmt.Errorf("target secret: %w", err)
	}
	urls := strings.Split(cfg.URL, ",")
	for i, u := range urls {
		urls[i] = strings.TrimSuffix(strings.TrimSpace(u), "/")
		if urls[i] == "" {
			return nil, fmt.Errorf("--url %q: empty entry", cfg.URL)
		}
	}
	return &target{url: urls[0], urls: urls, secret: secret, stop: func() error { return nil }}, nil
}

// embeddedTarget starts chatd in this process. Its data dir must be
// reachable by the postgres user the embedded cluster may run as, so a
// temporary one is created world-traversable (0755) under os.TempDir.
func embeddedTarget(ctx context.Context, cfg *Config) (*target, error) {
	dir, temp := cfg.DataDir, false
	if dir == "" {
		d, err := os.MkdirTemp("", "chatload-")
		if err != nil {
			return nil, fmt.Errorf("data dir: %w", err)
		}
		if err := os.Chmod(d, 0o755); err != nil {
			os.RemoveAll(d)
			return nil, fmt.Errorf("data dir: %w", err)
		}
		dir, temp = d, true
	}
	ncfg := node.Config{
		Listen:    "127.0.0.1:0",
		DataDir:   dir,
		JWTSecret: cfg.JWTSecret,
		Logger:    cfg.Logger.With("component", "chatd"),
	}
	ncfg.API.AdminUsers = []string{cfg.AdminUser}
	ncfg.Push.Lease, ncfg.Push.MaxAttempts, ncfg.Push.MaxPending, ncfg.Push.Grace = cfg.Lease, cfg.MaxAttempts, cfg.MaxPending, cfg.Grace
	if cfg.tuneNode != nil {
		cfg.tuneNode(&ncfg)
	}
	cleanup := func() {
		if temp {
			os.RemoveAll(dir)
		}
	}
	n, err := node.Start(ctx, ncfg)
	if err != nil {
		cleanup()
		return nil, fmt.Errorf("start embedded chatd: %w", err)
	}
	secret, err := node.JWTSecret(ncfg)
	if err != nil {
		n.Close()
		cleanup()
		return nil, fmt.Errorf("embedded secret: %w", err)
	}
	// The node outlives the load's context: it must stay up through the
	// drain and be shut down in order afterwards, not torn down mid-run.
	nctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	var runErr error
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		runErr = n.Run(nctx)
	}()
	stop := func() error {
		cancel()
		wg.Wait()
		cleanup()
		if runErr != nil {
			return fmt.Errorf("embedded chatd: %w", runErr)
		}
		return nil
	}
	return &target{url: n.URL(), urls: []string{n.URL()}, secret: secret, embedded: true, stop: stop}, nil
}

// clientURL is the node client i connects to.
func (t *target) clientURL(i int) string { return t.urls[i%len(t.urls)] }

// fallbackURLs are the nodes client i moves to, in turn, when its session
// on clientURL(i) ends: the others in list order after its own, as a load
// balancer would send a reconnecting client to whichever node is up. With
// one node there are none.
func (t *target) fallbackURLs(i int) []string {
	n := len(t.urls)
	var out []string
	for k := 1; k < n; k++ {
		out = append(out, t.urls[(i+k)%n])
	}
	return out
}

// token signs a token for user on the load's device.
func (t *target) token(user string) (string, error) {
	return api.IssueToken(t.secret, user, loadDevice, 24*time.Hour)
}

// loadDevice is every load client's device: each client is its own user,
// so the device that sent a message is excluded only at its sender.
const loadDevice = "load"
