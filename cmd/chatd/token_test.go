package main

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chatd/chatd/pkg/api"
)

// `chatd token --service NAME` prints a token for NAME that verifies as a
// service's with the server's secret; without --service, a person's.
func TestTokenForAService(t *testing.T) {
	const secret = "0123456789abcdef0123"
	t.Setenv("CHATD_JWT_SECRET", secret)
	for _, tt := range []struct {
		name    string
		args    []string
		service bool
	}{
		{"--service before the name", []string{"token", "--service", "backend"}, true},
		{"flags after --service NAME", []string{"token", "--service", "backend", "--ttl", "1h", "--device", "d1"}, true},
		{"--service after the name", []string{"token", "backend", "--service", "--ttl", "1h"}, true},
		{"a person", []string{"token", "backend"}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tok := strings.TrimSpace(helpText(t, tt.args...))
			id, err := api.VerifyToken([]byte(secret), tok)
			if err != nil {
				t.Fatalf("%q: %v", tok, err)
			}
			if id.User != "backend" || id.Service != tt.service {
				t.Fatalf("got %+v, want user backend, service %v", id, tt.service)
			}
		})
	}
}

// `chatd token` with a data dir that does not exist (a typo, or the wrong
// directory) refuses, saying which flag to give, instead of creating the
// directory and a new secret the server has never seen, whose tokens it
// would refuse with 401. A data dir that exists but has no secret yet
// (chatd not started there) still gets one, which the server then uses.
func TestTokenNeedsAnExistingDataDir(t *testing.T) {
	t.Setenv("CHATD_JWT_SECRET", "")
	missing := filepath.Join(t.TempDir(), "typo")
	err := run([]string{"token", "alice", "--data-dir", missing})
	if err == nil || !strings.Contains(err.Error(), missing) || !strings.Contains(err.Error(), "--data-dir") {
		t.Fatalf("token with data dir %s: %v, want a refusal naming it and --data-dir", missing, err)
	}
	if _, statErr := os.Stat(missing); !errors.Is(statErr, fs.ErrNotExist) {
		t.Fatalf("token created %s (stat: %v)", missing, statErr)
	}
	fresh := t.TempDir()
	tok := strings.TrimSpace(helpText(t, "token", "alice", "--data-dir", fresh))
	secret, err := os.ReadFile(filepath.Join(fresh, "jwt-secret"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := api.VerifyToken(bytes.TrimSpace(secret), tok); err != nil {
		t.Fatalf("token from a fresh data dir does not verify with the secret kept there: %v", err)
	}
}
