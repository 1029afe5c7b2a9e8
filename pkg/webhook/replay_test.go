package webhook_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/internal/testwait"
	"github.com/chatd/chatd/pkg/webhook"
)

// A replay of many dead letters takes them oldest first; an endpoint that
// refuses one is tried no further, so it still gets the rest in order on a
// later call, while the other endpoints' go through; a limit is kept, and
// what is left is counted.
func TestReplayManyKeepsEachEndpointsOrder(t *testing.T) {
	r := mustRig(t)
	rcA, rcB := newReceiver(t), newReceiver(t)
	rcA.setMode("500")
	rcB.setMode("500")
	epA, epB := endpoint(rcA), endpoint(rcB)
	d := r.start(t, r.js, webhook.Config{Endpoints: []webhook.Endpoint{epA, epB}, MaxAttempts: 2})
	testwait.Until(t, "the deliverer to win both elections", func() bool { return d.metric(t, "chatd_webhook_delivering") == 2 })
	for range 2 {
		r.publish(t, "c1", "")
		r.publish(t, "c2", "")
	}
	ctx := context.Background()
	nameA, nameB := webhook.ConsumerName(epA.URL), webhook.ConsumerName(epB.URL)
	deadLetters := func(name string) []string {
		failed, err := d.Failed(ctx, name, 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, f := range failed {
			ids = append(ids, f.WebhookID)
		}
		return ids
	}
	testwait.Until(t, "four dead letters for each endpoint", func() bool {
		return len(deadLetters(nameA)) == 4 && len(deadLetters(nameB)) == 4
	})
	wantA, wantB := deadLetters(nameA), deadLetters(nameB)
	firstA, err := d.Failed(ctx, nameA, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	got := func(rc *receiver) []string {
		rc.mu.Lock()
		defer rc.mu.Unlock()
		var ids []string
		for _, g := range rc.got {
			ids = append(ids, g.id)
		}
		return ids
	}

	rcB.setMode("ok")
	rep, err := d.ReplayMany(ctx, "", 100)
	if err != nil {
		t.Fatal(err)
	}
	wantStop := []chatd.WebhookReplayStop{{Endpoint: nameA, ID: firstA[0].ID}}
	if len(rep.Stopped) == 1 {
		if !strings.Contains(rep.Stopped[0].Error, "500") {
			t.Errorf("stopped at A's first: error %q, want the endpoint's 500", rep.Stopped[0].Error)
		}
		rep.Stopped[0].Error = "" // checked above
	}
	if rep.Replayed != 4 || rep.Left != 4 || !slices.Equal(rep.Stopped, wantStop) {
		t.Fatalf("replay with A refusing: got %+v, want 4 replayed (B's), 4 left, stopped at A's first (%d)", rep, firstA[0].ID)
	}
	if g := got(rcB); !slices.Equal(g, wantB) {
		t.Fatalf("B got %v, want its dead letters in order %v", g, wantB)
	}

	rcA.setMode("ok")
	if rep, err := d.ReplayMany(ctx, nameA, 3); err != nil || rep.Replayed != 3 || rep.Left != 1 || len(rep.Stopped) != 0 {
		t.Fatalf("replay of A, limit 3: got %+v, %v, want 3 replayed and 1 left", rep, err)
	}
	if rep, err := d.ReplayMany(ctx, nameA, 100); err != nil || rep.Replayed != 1 || rep.Left != 0 {
		t.Fatalf("replay of A's rest: got %+v, %v, want 1 replayed and none left", rep, err)
	}
	if g := got(rcA); !slices.Equal(g, wantA) {
		t.Fatalf("A got %v, want its dead letters in order %v", g, wantA)
	}
	if _, err := d.ReplayMany(ctx, "hook-000000000000", 1); !errors.Is(err, webhook.ErrUnknownEndpoint) || !errors.Is(err, chatd.ErrConflict) {
		t.Fatalf("replay of an endpoint not configured: got %v, want ErrUnknownEndpoint", err)
	}
}
