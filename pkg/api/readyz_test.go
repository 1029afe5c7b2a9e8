package api_test

import (
	"context"
	"errors"
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
