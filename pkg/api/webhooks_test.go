package api_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/pkg/api"
)

// fakeDeadLetters stands in for the webhook deliverer, whose real replay
// pkg/webhook tests against a real endpoint: here only the API's answers
// are under test.
type fakeDeadLetters struct {
	replayed []int64
	many     []string // endpoint and limit of each ReplayMany
}

func (f *fakeDeadLetters) Failed(_ context.Context, endpoint string, after int64, limit int) ([]chatd.WebhookFailure, error) {
	var out []chatd.WebhookFailure
	if endpoint != "" && endpoint != "hook-0123456789ab" {
		return out, nil
	}
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

func (f *fakeDeadLetters) ReplayMany(_ context.Context, endpoint string, limit int) (chatd.WebhookReplay, error) {
	f.many = append(f.many, fmt.Sprint(endpoint, " ", limit))
	switch endpoint {
	case "", "hook-0123456789ab":
		return chatd.WebhookReplay{Replayed: 1, Left: 1, Stopped: []chatd.WebhookReplayStop{
			{Endpoint: "hook-0123456789ab", ID: 2, Error: "endpoint answered 500 Internal Server Error"}}}, nil
	case "hook-idle":
		return chatd.WebhookReplay{}, nil
	}
	return chatd.WebhookReplay{}, fmt.Errorf("%s: webhook endpoint not configured: %w", endpoint, chatd.ErrConflict)
}

func TestAdminWebhookDeadLetters(t *testing.T) {
	dl := &fakeDeadLetters{}
	e := mustEnv(t, func(c *api.Config) {
		c.AdminUsers = []string{"root"}
		c.Webhooks = dl
	})
	e.wantError(t, 403, "forbidden", "alice", "GET", "/api/admin/webhooks/failed", nil)
	e.wantError(t, 403, "forbidden", "alice", "POST", "/api/admin/webhooks/failed/1/replay", nil)
	e.wantError(t, 403, "forbidden", "alice", "POST", "/api/admin/webhooks/failed/replay", nil)

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

	if page := e.mustCall(t, 200, "root", "GET", "/api/admin/webhooks/failed?endpoint=hook-other", nil); len(page["failed"].([]any)) != 0 {
		t.Fatalf("?endpoint=hook-other: got %v, want none", page)
	}
	e.wantError(t, 400, "invalid", "root", "GET", "/api/admin/webhooks/failed?endpoint=https://x.example/hook", nil)

	e.mustCall(t, 204, "root", "POST", "/api/admin/webhooks/failed/1/replay", nil)
	e.wantError(t, 502, "unavailable", "root", "POST", "/api/admin/webhooks/failed/2/replay", nil)
	e.wantError(t, 404, "not_found", "root", "POST", "/api/admin/webhooks/failed/9/replay", nil)
	e.wantError(t, 400, "invalid", "root", "POST", "/api/admin/webhooks/failed/x/replay", nil)
	if len(dl.replayed) != 1 {
		t.Fatalf("replayed: got %v, want [1]", dl.replayed)
	}

	rep := e.mustCall(t, 200, "root", "POST", "/api/admin/webhooks/failed/replay?endpoint=hook-0123456789ab&limit=5", nil)
	stopped := rep["stopped"].([]any)
	if rep["replayed"] != 1.0 || rep["left"] != 1.0 || len(stopped) != 1 || stopped[0].(map[string]any)["id"] != 2.0 {
		t.Fatalf("replay of many: got %v, want 1 replayed, 1 left, stopped at 2", rep)
	}
	if rep := e.mustCall(t, 200, "root", "POST", "/api/admin/webhooks/failed/replay?endpoint=hook-idle", nil); rep["replayed"] != 0.0 || len(rep["stopped"].([]any)) != 0 {
		t.Fatalf("replay of an endpoint without dead letters: got %v, want 0 replayed and stopped []", rep)
	}
	e.mustCall(t, 200, "root", "POST", "/api/admin/webhooks/failed/replay", nil)
	e.wantError(t, 409, "conflict", "root", "POST", "/api/admin/webhooks/failed/replay?endpoint=hook-gone", nil)
	e.wantError(t, 400, "invalid", "root", "POST", "/api/admin/webhooks/failed/replay?limit=1001", nil)
	e.wantError(t, 400, "invalid", "root", "POST", "/api/admin/webhooks/failed/replay?endpoint=x", nil)
	if want := "hook-0123456789ab 5|hook-idle 100| 100|hook-gone 100"; strings.Join(dl.many, "|") != want {
		t.Fatalf("replays of many asked: got %q, want %q", strings.Join(dl.many, "|"), want)
	}
}

// A node without webhooks answers every dead-letter call 404, saying so,
// to an admin; a non-admin still gets 403 first.
func TestAdminWebhookCallsWithoutWebhooks(t *testing.T) {
	e := mustEnv(t, func(c *api.Config) { c.AdminUsers = []string{"root"} })
	for _, call := range [][2]string{
		{"GET", "/api/admin/webhooks/failed"},
		{"POST", "/api/admin/webhooks/failed/replay"},
		{"POST", "/api/admin/webhooks/failed/1/replay"},
	} {
		e.wantError(t, 404, "not_found", "root", call[0], call[1], nil)
		e.wantError(t, 403, "forbidden", "alice", call[0], call[1], nil)
	}
}
