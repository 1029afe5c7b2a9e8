package testpg

import (
	"os"
	"sync"
	"testing"

	"github.com/chatd/chatd/internal/testlog"
)

// serverLog receives the server's log records, as slog's text handler
// writes them, and copies them to stderr (when logEnv is set) and to every
// buffer a test is watching with.
type serverLog struct {
	stderr bool // set before the server starts, never changed

	mu       sync.Mutex
	watchers map[*testlog.Buffer]struct{}
}

func (l *serverLog) Write(p []byte) (int, error) {
	if l.stderr {
		_, _ = os.Stderr.Write(p)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for w := range l.watchers {
		_, _ = w.Write(p)
	}
	return len(p), nil
}

// WatchLog returns a buffer that receives the server's log from now until
// t ends, one slog text record per line (level=WARN for the server's
// ERROR and WARNING lines, as embedded maps them). The server is shared by
// every test of the binary: a test that asserts on what the log lacks must
// not run in parallel with others.
func WatchLog(t testing.TB) *testlog.Buffer {
	t.Helper()
	if harness.pg == nil {
		t.Fatal("testpg: WatchLog called without testpg.Main in TestMain")
	}
	b := &testlog.Buffer{}
	harness.log.mu.Lock()
	if harness.log.watchers == nil {
		harness.log.watchers = make(map[*testlog.Buffer]struct{})
	}
	harness.log.watchers[b] = struct{}{}
	harness.log.mu.Unlock()
	t.Cleanup(func() {
		harness.log.mu.Lock()
		defer harness.log.mu.Unlock()
		delete(harness.log.watchers, b)
	})
	return b
}
