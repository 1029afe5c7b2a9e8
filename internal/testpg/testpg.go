// Package testpg is the PostgreSQL harness for tests: one private server per
// test binary, started from TestMain, and a fresh database per test. Tests
// never skip for want of a database: if the server cannot start, the binary
// fails.
//
//	func TestMain(m *testing.M) { testpg.Main(m) }
//
//	func TestX(t *testing.T) {
//		dsn := testpg.NewDatabase(t)
//		...
//	}
package testpg

import (
	"context"
	"fmt"
	"go.uber.org/goleak"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chatd/chatd/embedded"
	"github.com/jackc/pgx/v5"
)

// logEnv, when set to any value, sends the server's log to stderr at Debug
// level, for debugging a test run.
const logEnv = "CHATD_TEST_PGLOG"

// harness is the one server of this test binary. A package variable is the
// price of testing.M: TestMain cannot hand state to tests any other way.
// It is set before m.Run and never changed while tests run.
var harness struct {
	pg  *embedded.Postgres
	seq atomic.Int64 // makes database names unique within the binary
	log serverLog    // where the server's log lines go (see WatchLog)
}

// Main starts one embedded PostgreSQL for this test binary in a fresh
// directory under os.TempDir(), runs the tests, stops the server, removes
// the directory and exits with the tests' code. Call it from TestMain. If
// the server cannot start it prints why and exits 1.
func Main(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "chatd-testpg-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "testpg: %v\n", err)
		return 1
	}
	defer os.RemoveAll(dir)
	// When tests run as root the server runs as the postgres user, which
	// must be able to reach the cluster; MkdirTemp makes the dir 0700.
	if err := os.Chmod(dir, 0o755); err != nil {
		fmt.Fprintf(os.Stderr, "testpg: %v\n", err)
		return 1
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	harness.log.stderr = os.Getenv(logEnv) != ""
	log := slog.New(slog.NewTextHandler(&harness.log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	pg, err := embedded.StartPostgres(ctx, embedded.PostgresConfig{Dir: filepath.Join(dir, "pg"), Logger: log})
	if err != nil {
		fmt.Fprintf(os.Stderr, "testpg: cannot start PostgreSQL for the tests: %v\n", err)
		return 1
	}
	harness.pg = pg
	code := m.Run()

	stopCtx, stopCancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer stopCancel()
	if err := pg.Stop(stopCtx); err != nil {
		fmt.Fprintf(os.Stderr, "testpg: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	// Every goroutine a component starts has an owner that stops it: once
	// the tests and their cleanups are done, none may be left running.
	// Three of fasthttp's own are not ours to stop: its worker-pool cleaner
	// sleeps out its 10 s tick after the server stopped, and a client's
	// idle-connection cleaner its idle period after the client closed its
	// connections (then both exit); its process-wide date updater runs for
	// the life of the process.
	if err := goleak.Find(
		goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.(*workerPool).Start.func2"),
		goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.(*HostClient).connsCleaner"),
		goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.updateServerDate.func1"),
	); err != nil && code == 0 {
		fmt.Fprintf(os.Stderr, "testpg: goroutines leaked by the tests: %v\n", err)
		code = 1
	}
	return code
}

// Server returns this test binary's running server, for fault tests that
// restart it. It is shared by every test in the binary: a test that
// restarts it must not run in parallel with others.
func Server() *embedded.Postgres {
	if harness.pg == nil {
		panic("testpg: Server called without testpg.Main in TestMain")
	}
	return harness.pg
}

// NewDatabase creates a fresh, empty database for t and returns its DSN.
// The database is dropped, with any connections still open to it, when t
// ends. Safe for parallel tests.
func NewDatabase(t testing.TB) string {
	t.Helper()
	return newDatabase(t, "")
}

// NewDatabaseCollated is NewDatabase with the ICU collation icuLocale (for
// example "en-US") as the database's default, as on many hosted PostgreSQL
// services: it sorts text unlike Go (and unlike the managed cluster's C
// collation), "alice" before "Bob".
func NewDatabaseCollated(t testing.TB, icuLocale string) string {
	t.Helper()
	quoted := "'" + strings.ReplaceAll(icuLocale, "'", "''") + "'"
	return newDatabase(t, " TEMPLATE template0 LOCALE_PROVIDER icu ICU_LOCALE "+quoted)
}

func newDatabase(t testing.TB, options string) string {
	t.Helper()
	if harness.pg == nil {
		t.Fatal("testpg: NewDatabase called without testpg.Main in TestMain")
	}
	name := dbName(t.Name(), harness.seq.Add(1))
	if err := adminExec("CREATE DATABASE " + pgx.Identifier{name}.Sanitize() + options); err != nil {
		t.Fatalf("testpg: create database %s: %v", name, err)
	}
	t.Cleanup(func() {
		// FORCE: a test that leaked a connection must not leak its database.
		if err := adminExec("DROP DATABASE IF EXISTS " + pgx.Identifier{name}.Sanitize() + " WITH (FORCE)"); err != nil {
			t.Errorf("testpg: drop database %s: %v", name, err)
		}
	})
	return harness.pg.DSN(name)
}

// adminExec runs sql on the maintenance database, on a connection of its
// own: CREATE and DROP DATABASE cannot run inside the database they act on,
// and a short-lived connection keeps none open while tests run.
func adminExec(sql string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, harness.pg.DSN("postgres"))
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, sql)
	return err
}

var unsafeChars = regexp.MustCompile(`[^a-z0-9_]+`)

// dbName makes a readable, unique database name from the test name, within
// PostgreSQL's 63-byte identifier limit.
func dbName(testName string, seq int64) string {
	base := unsafeChars.ReplaceAllString(strings.ToLower(testName), "_")
	suffix := fmt.Sprintf("_%d_%d", os.Getpid(), seq)
	if max := 63 - len("t_") - len(suffix); len(base) > max {
		base = base[:max]
	}
	return "t_" + base + suffix
}
