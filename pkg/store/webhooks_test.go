package store_test

import (
	"context"
	"errors"
	"testing"

	"github.com/chatd/chatd"
)

// One session holds an endpoint's election; releasing it lets another
// take it; the relay's lock and other endpoints' are apart from it.
func TestWebhookLockIsPerEndpoint(t *testing.T) {
	s, _ := mustOpen(t)
	ctx := context.Background()
	l, ok, err := s.TryWebhookLock(ctx, "hook-a")
	if err != nil || !ok {
		t.Fatalf("first lock: got %v, %v, want it held", ok, err)
	}
	if _, ok, err := s.TryWebhookLock(ctx, "hook-a"); err != nil || ok {
		t.Fatalf("second lock of hook-a: got %v, %v, want refused", ok, err)
	}
	other, ok, err := s.TryWebhookLock(ctx, "hook-b")
	if err != nil || !ok {
		t.Fatalf("lock of hook-b: got %v, %v, want it held", ok, err)
	}
	defer other.Release()
	relay, ok, err := s.TryRelayLock(ctx)
	if err != nil || !ok {
		t.Fatalf("relay lock beside webhook locks: got %v, %v, want it held", ok, err)
	}
	defer relay.Release()
	l.Release()
	again, ok, err := s.TryWebhookLock(ctx, "hook-a")
	if err != nil || !ok {
		t.Fatalf("hook-a after release: got %v, %v, want it held", ok, err)
	}
	again.Release()
}

// A dead letter keeps its payload byte for byte, pages by id (of one
// endpoint or all), is counted, and is gone once deleted.
func TestWebhookFailures(t *testing.T) {
	s, _ := mustOpen(t)
	ctx := context.Background()
	body := `{"type":"chat.message",  "data":{"seq":1}}` // spacing kept: a replay signs these bytes
	var ids []int64
	for i := range 3 {
		id, err := s.SetAsideWebhook(ctx, chatd.WebhookFailure{Endpoint: "hook-a", URL: "https://x.example", WebhookID: "msg_m_a",
			Chat: "c1", Seq: int64(i + 1), MessageID: "m", Kind: chatd.EventMessage, Body: []byte(body), Attempts: 10, LastError: "500"})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	other, err := s.SetAsideWebhook(ctx, chatd.WebhookFailure{Endpoint: "hook-b", URL: "https://y.example", WebhookID: "msg_m_b",
		Chat: "c1", Seq: 1, MessageID: "m", Kind: chatd.EventMessage, Body: []byte(body), Attempts: 10, LastError: "500"})
	if err != nil {
		t.Fatal(err)
	}
	page, err := s.WebhookFailures(ctx, "hook-a", ids[0], 10)
	if err != nil || len(page) != 2 || page[0].ID != ids[1] || page[1].Seq != 3 {
		t.Fatalf("hook-a's page after the first: got %+v, %v, want the 2nd and 3rd", page, err)
	}
	if page, err := s.WebhookFailures(ctx, "", ids[1], 10); err != nil || len(page) != 2 || page[1].ID != other {
		t.Fatalf("every endpoint's page after the second: got %+v, %v, want hook-a's 3rd and hook-b's", page, err)
	}
	for _, tc := range []struct {
		endpoint string
		want     int64
	}{{"", 4}, {"hook-a", 3}, {"hook-b", 1}, {"hook-c", 0}} {
		if n, err := s.CountWebhookFailures(ctx, tc.endpoint); err != nil || n != tc.want {
			t.Errorf("count of %q: got %d, %v, want %d", tc.endpoint, n, err, tc.want)
		}
	}
	f, err := s.WebhookFailure(ctx, ids[0])
	if err != nil || string(f.Body) != body || f.Attempts != 10 || f.Kind != chatd.EventMessage || f.FailedAt.IsZero() {
		t.Fatalf("dead letter: got %+v, %v", f, err)
	}
	if err := s.DeleteWebhookFailure(ctx, ids[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := s.WebhookFailure(ctx, ids[0]); !errors.Is(err, chatd.ErrNotFound) {
		t.Fatalf("deleted dead letter: got %v, want ErrNotFound", err)
	}
}
