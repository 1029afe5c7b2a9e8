package stream_test

import (
	"context"
	"testing"
	"time"

	"github.com/chatd/chatd/pkg/stream"
)

// The duplicate window is what the server keeps every relayed message's id
// in memory for: Ensure gives a new stream the default, and an existing
// stream the window it is told, so a changed --stream-duplicates takes
// effect on the next start without recreating the stream.
func TestEnsureSetsTheDuplicateWindow(t *testing.T) {
	_, js := mustInProcessJS(t)
	ctx := context.Background()
	window := func() time.Duration {
		t.Helper()
		s, err := js.Stream(ctx, stream.DefaultName)
		if err != nil {
			t.Fatal(err)
		}
		return s.CachedInfo().Config.Duplicates
	}
	if _, err := stream.Ensure(ctx, js, stream.Config{}); err != nil {
		t.Fatal(err)
	}
	if got := window(); got != stream.DefaultDuplicates {
		t.Fatalf("new stream's duplicate window %v, want the default %v", got, stream.DefaultDuplicates)
	}
	if _, err := stream.Ensure(ctx, js, stream.Config{Duplicates: 45 * time.Second}); err != nil {
		t.Fatal(err)
	}
	if got := window(); got != 45*time.Second {
		t.Fatalf("updated stream's duplicate window %v, want 45s", got)
	}
}
