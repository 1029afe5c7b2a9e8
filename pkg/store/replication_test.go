package store_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/chatd/chatd/internal/testlog"
	"github.com/chatd/chatd/internal/testpgha"
	"github.com/chatd/chatd/pkg/store"
)

// Opening the store on a primary warns when it has a standby that commits
// do not wait for (an acked message could be lost on failover), and not
// when the standby is synchronous.
func TestOpenWarnsOfAsynchronousStandbys(t *testing.T) {
	for _, tc := range []struct {
		name string
		sync bool
		want bool
	}{
		{name: "asynchronous", sync: false, want: true},
		{name: "synchronous", sync: true, want: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pair := testpgha.Start(t, testpgha.Config{Sync: tc.sync})
			var logs testlog.Buffer
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			st, err := store.Open(ctx, pair.URL("chatd"), store.Config{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			if err != nil {
				t.Fatalf("open: %v", err)
			}
			defer st.Close()
			got := strings.Contains(logs.String(), "level=WARN") && strings.Contains(logs.String(), "acked message can be lost")
			if got != tc.want {
				t.Errorf("warned %v, want %v; log:\n%s", got, tc.want, logs.String())
			}
		})
	}
}
