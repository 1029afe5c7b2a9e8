package api_test

import (
	"context"
	"errors"
	"io"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chatd/chatd/pkg/api"
)

// readyzStatus is GET /readyz's status, the answer checked against the
// OpenAPI document; safe to call from any goroutine.
func readyzStatus(t *testing.T, base string) (int, error) {
	resp, err := checkedClient(t).Get(base + "/readyz")
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// /readyz is public: however many requests arrive, the dependencies are
// checked at most once per api.ReadyCheckTTL of the server's clock, with
// one check shared by the requests that arrive while it runs; and a
// dependency that fails shows as 503 no later than one TTL after.
func TestReadyzChecksOncePerTTL(t *testing.T) {
	var (
		checks  atomic.Int64
		failing atomic.Bool
		offset  atomic.Int64 // nanoseconds the test clock is ahead
		base    = time.Now()
	)
	const requests = 32
	// The check waits until every request could have joined it (or a
	// moment has passed), so that concurrent requests really overlap it.
	all := make(chan struct{})
	e := mustEnv(t, func(c *api.Config) {
		c.Now = func() time.Time { return base.Add(time.Duration(offset.Load())) }
		c.Ready = func(ctx context.Context) error {
			if checks.Add(1) == requests {
				close(all)
			}
			select {
			case <-all:
			case <-time.After(200 * time.Millisecond):
			}
			if failing.Load() {
				return errors.New("postgres: down")
			}
			return nil
		}
	})
	want := func(step string, status int, wantChecks int64) {
		t.Helper()
		got, err := readyzStatus(t, e.base)
		if err != nil {
			t.Fatal(err)
		}
		if got != status || checks.Load() != wantChecks {
			t.Fatalf("%s: got status %d after %d checks, want %d after %d", step, got, checks.Load(), status, wantChecks)
		}
	}

	var wg sync.WaitGroup
	statuses := make([]int, requests)
	for i := range requests {
		wg.Add(1)
		go func() {
			defer wg.Done()
			statuses[i], _ = readyzStatus(t, e.base)
		}()
	}
	wg.Wait()
	for i, s := range statuses {
		if s != 200 {
			t.Errorf("concurrent request %d: got status %d, want 200", i, s)
		}
	}
	if n := checks.Load(); n != 1 {
		t.Fatalf("got %d checks for %d concurrent requests, want 1", n, requests)
	}
	for range requests {
		want("rapid request within the TTL", 200, 1)
	}
	offset.Store(int64(api.ReadyCheckTTL - time.Millisecond))
	want("just before the TTL", 200, 1)
	offset.Store(int64(api.ReadyCheckTTL))
	want("at the TTL", 200, 2)

	failing.Store(true)
	want("dependency failed, result still cached", 200, 2)
	offset.Add(int64(api.ReadyCheckTTL))
	want("one TTL after the failure", 503, 3)
	want("failure cached", 503, 3)

	failing.Store(false)
	offset.Add(int64(api.ReadyCheckTTL))
	want("recovered", 200, 4)
}

// /readyz names the PostgreSQL timeline the node writes on and the last
// failover it followed, so a probe's body shows a failover without a
// metrics stack; before any failover the body has the timeline alone.
func TestReadyzNamesPostgresFailover(t *testing.T) {
	var state atomic.Pointer[api.PostgresState]
	state.Store(&api.PostgresState{Timeline: 1})
	e := mustEnv(t, func(c *api.Config) {
		c.Ready = func(context.Context) error { return nil }
		c.Postgres = func() api.PostgresState { return *state.Load() }
	})
	body := func() string {
		t.Helper()
		resp, err := checkedClient(t).Get(e.base + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("readyz: status %d, %v", resp.StatusCode, err)
		}
		return string(b)
	}
	if got, want := body(), `{"status":"ready","postgres":{"timeline":1}}`; got != want {
		t.Errorf("before a failover: got %s, want %s", got, want)
	}
	at := time.Date(2026, 12, 4, 5, 40, 0, 0, time.UTC)
	state.Store(&api.PostgresState{Timeline: 2, LastFailover: &api.PostgresFailover{FromTimeline: 1, ToTimeline: 2, At: at}})
	want := `{"status":"ready","postgres":{"timeline":2,"last_failover":{"from_timeline":1,"to_timeline":2,"at":"2026-12-04T05:40:00Z"}}}`
	if got := body(); got != want {
		t.Errorf("after a failover: got %s, want %s", got, want)
	}
}
