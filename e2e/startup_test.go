package e2e_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// closedAddr is a loopback address nothing listens on: a port taken from
// the kernel and released.
func closedAddr(t *testing.T) string {
	t.Helper()
	return freeAddr(t)
}

// A startup that fails ends the process with exit code 1 and one line on
// stderr that says what went wrong and what to do: never a Go panic, and
// never a managed PostgreSQL left running under the data dir.
func TestStartupFailuresExitCleanly(t *testing.T) {
	bin := mustBuildChatd(t)
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()

	tests := []struct {
		name string
		args []string
		want string // in the error line
		// afterPostgres: the failure comes after the managed PostgreSQL
		// started, so the cleanup has a server to stop.
		afterPostgres bool
	}{
		{"short jwt secret", []string{"--jwt-secret", "short"}, "CHATD_JWT_SECRET", false},
		{"busy port", []string{"--listen", busy.Addr().String()}, "--listen", false},
		{"nats unreachable", []string{"--nats-url", "nats://" + closedAddr(t)}, "--nats-url", true},
		{"database unreachable", []string{"--database-url", "postgres://chatd@" + closedAddr(t) + "/chatd?connect_timeout=5"}, "--database-url", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dataDir := mustDataDir(t)
			args := append([]string{"--data-dir", dataDir, "--listen", freeAddr(t), "--log-level", "error",
				"--jwt-secret", testSecret}, tt.args...)
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, args...)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 1 {
				t.Errorf("chatd exited with %v, want exit status 1", err)
			}
			out := stdout.String() + stderr.String()
			if strings.Contains(out, "panic") || strings.Contains(out, "goroutine ") {
				t.Fatalf("output has a Go panic, want one error line:\n%s", out)
			}
			lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
			if len(lines) != 1 || !strings.HasPrefix(lines[0], "chatd: ") || !strings.Contains(lines[0], tt.want) {
				t.Errorf("stderr:\n%s\nwant one line starting \"chatd: \" mentioning %q", stderr.String(), tt.want)
			}
			t.Logf("stderr: %s", stderr.String())
			if _, err := os.Stat(filepath.Join(dataDir, "pg", "PG_VERSION")); (err == nil) != tt.afterPostgres {
				t.Errorf("managed PostgreSQL cluster present: %v, want %v", err == nil, tt.afterPostgres)
			}
			if pids := processesMentioning(dataDir); len(pids) > 0 {
				t.Errorf("processes still running on the data dir after chatd exited: %v", pids)
			}
		})
	}
}
