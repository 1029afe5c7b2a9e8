package api_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/pkg/api"
)

// fakeDeadLetters stands in for the webhook deliverer, whose real replay
// pkg/webhook tests against a real endpoint: here only the API's answers
// are under test.
type fakeDeadLetters struct{ replayed []int64 }

func (f *fakeDeadLetters) Failed(_ context.Context, after int64, limit int) ([]chatd.WebhookFailure, error) {
	var out []chatd.WebhookFailure
	for id := after + 1; id <= 3 && len(out) < limit; id++ {
		out = append(out, chatd.WebhookFailure{ID: id, Endpoint: "hook-0123456789ab", URL: "https://x.example/hook",
			WebhookID: "msg_m1_0123456789ab", Chat: "c1", Seq: id, MessageID: "m1", Kind: chatd.EventMessage, Attempts: 10,
			LastError: "endpoint answered 500 Internal Server Error", FailedAt: time.Unix(1700000000, 0).UTC(),
			Body: []byte(`{"type":"chat.message","timestamp":"2026-12-03T12:00:00Z","data":{"kind":"message","chat_id":"c1","seq":1,` +
				`"recipients":["alice","bob"],"event":{"id":"m1","cid":"c1m1","chat":"c1","from":"alice","body":"hi","seq":1,"ts":"2026-12-03T12:00:00Z"}}}`)})
	}
	return out, nil
}

func (f *fakeDeadLetters) Replay(_ context.Context, id int64) error {
	switch id {
	case 1:
		f.replayed = append(f.replayed, id)
		return nil
	case 2:
		return fmt.Errorf("replay 2 to hook-1: endpoint answered 500: %w", chatd.ErrUnavailable)
	}
	return fmt.Errorf("webhook failure %d: %w", id, chatd.ErrNotFound)
}

func TestAdminWebhookDeadLetters(t *testing.T) {
	dl := &fakeDeadLetters{}
	e := mustEnv(t, func(c *api.Config) {
		c.AdminUsers = []string{"root"}
		c.Webhooks = dl
	})
	e.wantError(t, 403, "forbidden", "alice", "GET", "/api/admin/webhooks/failed", nil)
	e.wantError(t, 403, "forbidden", "alice", "POST", "/api/admin/webhooks/failed/1/replay", nil)

	page := e.mustCall(t, 200, "root", "GET", "/api/admin/webhooks/failed?limit=2", nil)
	if got := page["failed"].([]any); len(got) != 2 || page["next"] != 2.0 {
		t.Fatalf("first page: got %v, want 2 dead letters and next 2", page)
	}
	page = e.mustCall(t, 200, "root", "GET", "/api/admin/webhooks/failed?after=2", nil)
	if got := page["failed"].([]any); len(got) != 1 || page["next"] != 0.0 ||
		got[0].(map[string]any)["payload"].(map[string]any)["type"] != "chat.message" {
		t.Fatalf("last page: got %v, want dead letter 3 with its payload as JSON and next 0", page)
	}
	e.wantError(t, 400, "invalid", "root", "GET", "/api/admin/webhooks/failed?limit=0", nil)
	// A parameter given empty is the same as one left out, as the document says.
	if page := e.mustCall(t, 200, "root", "GET", "/api/admin/webhooks/failed?after=&limit=", nil); len(page["failed"].([]any)) != 3 {
		t.Fatalf("?after=&limit=: got %v, want the first page of all three", page)
	}

	e.mustCall(t, 204, "root", "POST", "/api/admin/webhooks/failed/1/replay", nil)
	e.wantError(t, 502, "unavailable", "root", "POST", "/api/admin/webhooks/failed/2/replay", nil)
	e.wantError(t, 404, "not_found", "root", "POST", "/api/admin/webhooks/failed/9/replay", nil)
	e.wantError(t, 400, "invalid", "root", "POST", "/api/admin/webhooks/failed/x/replay", nil)
	if len(dl.replayed) != 1 {
		t.Fatalf("replayed: got %v, want [1]", dl.replayed)
	}
}
