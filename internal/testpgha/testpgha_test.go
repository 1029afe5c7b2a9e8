package testpgha_test

import (
	"context"
	"testing"
	"time"

	"github.com/chatd/chatd/internal/testpgha"
	"github.com/jackc/pgx/v5"
)

// A row committed on a synchronous pair survives SIGKILL of the primary,
// and the multi-host URL finds the promoted standby.
func TestSyncStandbyKeepsCommitAcrossFailover(t *testing.T) {
	p := testpgha.Start(t, testpgha.Config{Sync: true})
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	p.Primary.Exec(t, "chatd", "CREATE TABLE t (v int); INSERT INTO t VALUES (42)")

	p.Primary.Kill(t)
	p.Standby.Promote(t)

	conn, err := pgx.Connect(ctx, p.URL("chatd"))
	if err != nil {
		t.Fatalf("connect after promotion: %v", err)
	}
	defer conn.Close(context.Background())
	var v int
	if err := conn.QueryRow(ctx, "SELECT v FROM t").Scan(&v); err != nil || v != 42 {
		t.Fatalf("got %d, %v; want 42", v, err)
	}
	if _, err := conn.Exec(ctx, "INSERT INTO t VALUES (43)"); err != nil {
		t.Fatalf("write on the promoted standby: %v", err)
	}
}
