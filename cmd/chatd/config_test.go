package main

import (
	"flag"
	"io"
	"testing"
	"time"

	"github.com/chatd/chatd/pkg/store"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The HTTP edge's limits and the shutdown delay reach the node's Config
// from flags, and from the environment when no flag is given.
func TestEdgeFlags(t *testing.T) {
	t.Setenv("CHATD_MAX_CONNECTIONS", "7")
	t.Setenv("CHATD_SHUTDOWN_DELAY", "4s")
	var s settings
	fs := flag.NewFlagSet("chatd", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	f := registerFlags(fs, &s)
	if err := fs.Parse([]string{"--http-read-timeout", "3s", "--max-header-bytes", "8192"}); err != nil {
		t.Fatal(err)
	}
	if len(f.errs) > 0 {
		t.Fatal(f.errs)
	}
	c := s.node
	if c.API.HTTP.ReadTimeout != 3*time.Second || c.API.HTTP.MaxHeaderBytes != 8192 || c.API.HTTP.MaxConnections != 7 || c.ShutdownDelay != 4*time.Second {
		t.Fatalf("got read timeout %v, header bytes %d, max connections %d, shutdown delay %v; want 3s, 8192, 7, 4s",
			c.API.HTTP.ReadTimeout, c.API.HTTP.MaxHeaderBytes, c.API.HTTP.MaxConnections, c.ShutdownDelay)
	}
}

// The read timeout's default keeps a silent client's connection under 15 s.
func TestReadTimeoutDefaultIsShort(t *testing.T) {
	var s settings
	fs := flag.NewFlagSet("chatd", flag.ContinueOnError)
	registerFlags(fs, &s)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	if d := s.node.API.HTTP.ReadTimeout; d <= 0 || d >= 15*time.Second {
		t.Fatalf("default --http-read-timeout %v, want above 0 and under 15s", d)
	}
}

// The development login is off unless the flag or CHATD_DEV_LOGIN asks.
func TestDevLoginFlag(t *testing.T) {
	parse := func(args ...string) bool {
		var s settings
		fs := flag.NewFlagSet("chatd", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		f := registerFlags(fs, &s)
		if err := fs.Parse(args); err != nil || len(f.errs) > 0 {
			t.Fatal(err, f.errs)
		}
		return s.node.API.DevLogin
	}
	if parse() {
		t.Error("dev login on by default, want off")
	}
	if !parse("--dev-login") {
		t.Error("--dev-login did not turn it on")
	}
	t.Setenv("CHATD_DEV_LOGIN", "true")
	if !parse() {
		t.Error("CHATD_DEV_LOGIN=true did not turn it on")
	}
}

// --database-pool sizes the node's PostgreSQL pool, from the flag or
// its environment variable, and defaults to the store's own default.
func TestDatabasePoolFlag(t *testing.T) {
	parse := func(args ...string) int {
		t.Helper()
		var s settings
		fs := flag.NewFlagSet("chatd", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		f := registerFlags(fs, &s)
		if err := fs.Parse(args); err != nil || len(f.errs) > 0 {
			t.Fatal(err, f.errs)
		}
		return s.node.Store.MaxConns
	}
	if got := parse(); got != store.DefaultMaxConns {
		t.Errorf("default: got %d, want %d", got, store.DefaultMaxConns)
	}
	if got := parse("--database-pool", "40"); got != 40 {
		t.Errorf("flag: got %d, want 40", got)
	}
	t.Setenv("CHATD_DATABASE_POOL", "8")
	if got := parse(); got != 8 {
		t.Errorf("env: got %d, want 8", got)
	}
}
