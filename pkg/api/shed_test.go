package api_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chatd/chatd/pkg/api"
)

// A REST send answered 503 because its commit hung past the store timeout
// (another transaction holds the chat's row) is not stored afterwards,
// unless its answer said the outcome is unknown; resending each with the
// same cid then tells the truth (200 when stored, 201 when not).
func TestRESTSendAnswered503IsNotStoredLater(t *testing.T) {
	e := mustEnv(t, func(c *api.Config) { c.StoreTimeout = 300 * time.Millisecond })
	chat := e.mustGroup(t, "alice", "bob")
	ctx := context.Background()
	tx, err := e.store.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `SELECT 1 FROM chats WHERE id = $1 FOR UPDATE`, chat); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tx.Rollback(ctx) })

	path := "/api/chats/" + chat + "/messages"
	// The first goes into a transaction that hangs on the row; the second
	// waits behind it for the chat.
	answers := map[string]string{}
	for _, cid := range []string{"first", "second"} {
		status, out, _ := e.call(t, "alice", "POST", path, map[string]any{"cid": cid, "body": cid})
		if status != 503 || out["code"] != "unavailable" {
			t.Fatalf("send %s behind a hung commit: status %d %v, want 503 unavailable", cid, status, out)
		}
		answers[cid], _ = out["error"].(string)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	// A chat's sends commit in order: once this one is stored, the others
	// were stored or dropped.
	e.mustCall(t, 201, "alice", "POST", path, map[string]any{"cid": "third", "body": "third"})

	page := e.mustCall(t, 200, "alice", "GET", path, nil)
	stored := map[string]bool{}
	for _, m := range page["messages"].([]any) {
		stored[m.(map[string]any)["cid"].(string)] = true
	}
	for cid, answer := range answers {
		unknown := strings.Contains(answer, "outcome unknown")
		if stored[cid] && !unknown {
			t.Errorf("send %s answered 503 %q was stored afterwards", cid, answer)
		}
		want := 201
		if stored[cid] {
			want = 200
		}
		e.mustCall(t, want, "alice", "POST", path, map[string]any{"cid": cid, "body": cid})
	}
}
