package testpg_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chatd/chatd/internal/testpg"
	"github.com/jackc/pgx/v5"
)

func TestMain(m *testing.M) { testpg.Main(m) }

func mustConn(t *testing.T, dsn string) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect %s: %v", dsn, err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

func databaseExists(t *testing.T, name string) bool {
	t.Helper()
	var exists bool
	err := mustConn(t, testpg.Server().DSN("postgres")).QueryRow(context.Background(),
		"SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists)
	if err != nil {
		t.Fatal(err)
	}
	return exists
}

func currentDatabase(t *testing.T, conn *pgx.Conn) string {
	t.Helper()
	var name string
	if err := conn.QueryRow(context.Background(), "SELECT current_database()").Scan(&name); err != nil {
		t.Fatal(err)
	}
	return name
}

func TestNewDatabaseIsFreshAndIsolated(t *testing.T) {
	a := mustConn(t, testpg.NewDatabase(t))
	b := mustConn(t, testpg.NewDatabase(t))
	if na, nb := currentDatabase(t, a), currentDatabase(t, b); na == nb {
		t.Fatalf("two NewDatabase calls gave the same database %q", na)
	}
	ctx := context.Background()
	if _, err := a.Exec(ctx, "CREATE TABLE only_in_a (x int)"); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := b.QueryRow(ctx, "SELECT count(*) FROM pg_tables WHERE tablename = 'only_in_a'").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("table created in one database visible in another: got %d, want 0", n)
	}
}

func TestNewDatabaseDroppedAfterTestEvenWithOpenConnection(t *testing.T) {
	var name string
	var leaked *pgx.Conn
	t.Run("user", func(t *testing.T) {
		dsn := testpg.NewDatabase(t)
		conn, err := pgx.Connect(context.Background(), dsn)
		if err != nil {
			t.Fatal(err)
		}
		leaked = conn // deliberately left open past the subtest
		name = currentDatabase(t, conn)
	})
	defer leaked.Close(context.Background())
	if name == "" {
		t.Fatal("subtest did not get a database")
	}
	if databaseExists(t, name) {
		t.Fatalf("database %s still exists after its test ended", name)
	}
}

func TestNewDatabaseInParallel(t *testing.T) {
	for i := range 6 {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			t.Parallel()
			conn := mustConn(t, testpg.NewDatabase(t))
			if got := currentDatabase(t, conn); !strings.HasPrefix(got, "t_testnewdatabaseinparallel_") {
				t.Fatalf("database name: got %q, want prefix t_testnewdatabaseinparallel_", got)
			}
		})
	}
}

func TestNewDatabaseLongTestNameFitsIdentifierLimit(t *testing.T) {
	t.Run(strings.Repeat("very long subtest name ", 5), func(t *testing.T) {
		conn := mustConn(t, testpg.NewDatabase(t))
		if got := currentDatabase(t, conn); len(got) > 63 {
			t.Fatalf("database name %q is %d bytes, want <= 63", got, len(got))
		}
	})
}

// TestServerRestartKeepsDatabases runs last-ish and alone (not parallel):
// it takes the shared server down and up again.
func TestServerRestartKeepsDatabases(t *testing.T) {
	dsn := testpg.NewDatabase(t)
	ctx := context.Background()
	if _, err := mustConn(t, dsn).Exec(ctx, "CREATE TABLE kept (x int); INSERT INTO kept VALUES (7)"); err != nil {
		t.Fatal(err)
	}
	if err := testpg.Server().Restart(ctx); err != nil {
		t.Fatalf("Restart: %v", err)
	}
	var x int
	if err := mustConn(t, dsn).QueryRow(ctx, "SELECT x FROM kept").Scan(&x); err != nil {
		t.Fatal(err)
	}
	if x != 7 {
		t.Fatalf("after restart: got %d, want 7", x)
	}
}
