package testnats

import (
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// storeFailed is JetStream's "error creating store for stream".
const storeFailed jetstream.ErrorCode = 10049

// recreateTimeout bounds the retries of Recreate: the server's clean-up
// goroutines finish in milliseconds.
const recreateTimeout = 5 * time.Second

// Recreate runs create, which makes again a stream just deleted from the
// same server, and runs it again while it fails with "error creating store
// for stream". nats-server removes a deleted stream's directories in
// goroutines of its own (mset.stop in its stream.go), and one that runs
// late can remove the directory the new store is being made in. Any other
// error, or this one past recreateTimeout, fails t.
func Recreate(t testing.TB, create func() error) {
	t.Helper()
	deadline := time.Now().Add(recreateTimeout)
	for {
		err := create()
		if err == nil {
			return
		}
		var apiErr *jetstream.APIError
		if !errors.As(err, &apiErr) || apiErr.ErrorCode != storeFailed || time.Now().After(deadline) {
			t.Fatalf("testnats: recreate stream: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
