package ingest_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/internal/testlog"
	"github.com/chatd/chatd/pkg/ingest"
)

// A database failure repeated for every batch is logged once, and the
// repeats as one count when ingest stops, not one WARN line per batch: even
// a short PostgreSQL outage under load used to write a line per batch.
func TestRepeatedCommitFailuresAreSampled(t *testing.T) {
	s := mustStore(t)
	chat := mustGroup(t, s, "alice", "bob")
	ctx := ctxT(t, 30*time.Second)
	for _, q := range []string{
		`CREATE FUNCTION fail() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'disk on fire' USING ERRCODE = 'disk_full'; END $$`,
		`CREATE TRIGGER fail BEFORE INSERT ON outbox FOR EACH STATEMENT EXECUTE FUNCTION fail()`,
	} {
		if _, err := s.Pool().Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	var logs testlog.Buffer
	in, err := ingest.New(ingest.Config{
		Store: s, BatchSize: 1, Workers: 1,
		Logger: slog.New(slog.NewTextHandler(&logs, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- in.Run(runCtx) }()

	const n = 20
	for i := 0; i < n; i++ {
		r, err := in.Send(ctx, chatd.SendRequest{Chat: chat, From: "alice", Device: "d", CID: fmt.Sprint("f", i), Body: "x"})
		if err != nil {
			t.Fatal(err)
		}
		if !errors.Is(r.Err, chatd.ErrUnavailable) {
			t.Fatalf("send %d during the failure: %+v, want ErrUnavailable", i, r)
		}
	}
	const msg = "commit batch failed; senders told to resend"
	if got := strings.Count(logs.String(), msg); got != 1 {
		t.Fatalf("%d failed batches wrote %d %q lines, want 1 (then a count):\n%s", n, got, msg, logs.String())
	}
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	out := logs.String()
	if got := strings.Count(out, msg); got != 2 || !strings.Contains(out, fmt.Sprintf("repeated=%d", n-1)) {
		t.Fatalf("after stop: %d lines, want the first and one summary with repeated=%d:\n%s", got, n-1, out)
	}
}
