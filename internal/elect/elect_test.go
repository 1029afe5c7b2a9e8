package elect_test

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/chatd/chatd/internal/elect"
	"github.com/chatd/chatd/internal/testpg"
	"github.com/chatd/chatd/internal/testwait"
	"github.com/chatd/chatd/pkg/store"
)

func TestMain(m *testing.M) { testpg.Main(m) }

// node is one process taking part in an election on its own store (its
// own connections to one real database).
type node struct {
	cancel  context.CancelFunc
	done    chan struct{}
	mu      sync.Mutex
	leading bool
	leads   int
}

func (n *node) isLeading() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.leading
}

func start(t *testing.T, dsn string) *node {
	t.Helper()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	st, err := store.Open(context.Background(), dsn, store.Config{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	ctx, cancel := context.WithCancel(context.Background())
	n := &node{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(n.done)
		elect.Run(ctx, elect.Config{
			What: "test", Name: "hook-test", Standby: 100 * time.Millisecond,
			TryLock: func(ctx context.Context, name string) (elect.Lock, bool, error) {
				l, ok, err := st.TryWebhookLock(ctx, name)
				if !ok {
					return nil, false, err
				}
				return l, true, nil
			},
			Lead: func(ctx context.Context) error { <-ctx.Done(); return nil },
			Leading: func(on bool) {
				n.mu.Lock()
				defer n.mu.Unlock()
				n.leading = on
				if on {
					n.leads++
				}
			},
			Log: quiet, Warn: quiet.Warn,
		})
	}()
	t.Cleanup(func() { n.cancel(); <-n.done })
	return n
}

// Of two nodes exactly one leads; when it stops, the other takes over,
// and Run returns once its ctx ends.
func TestOneLeadsThenTheOther(t *testing.T) {
	dsn := testpg.NewDatabase(t)
	a, b := start(t, dsn), start(t, dsn)
	testwait.Until(t, "one node to lead", func() bool { return a.isLeading() || b.isLeading() })
	time.Sleep(500 * time.Millisecond) // five standby rounds for the other to (wrongly) win too
	if a.isLeading() && b.isLeading() {
		t.Fatal("both nodes lead")
	}
	leader, other := a, b
	if b.isLeading() {
		leader, other = b, a
	}
	leader.cancel()
	<-leader.done
	if leader.isLeading() {
		t.Fatal("the stopped node still counts as leading")
	}
	testwait.Until(t, "the other node to take over", other.isLeading)
	other.mu.Lock()
	defer other.mu.Unlock()
	if other.leads != 1 {
		t.Fatalf("the other node led %d times, want 1", other.leads)
	}
}
