package store

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/chatd/chatd/internal/logsample"
	"github.com/jackc/pgx/v5"
)

// Reconnect backoff of ListenOutbox.
const (
	listenBackoffMin = 100 * time.Millisecond
	listenBackoffMax = 5 * time.Second
)

// ListenOutbox calls wake whenever any node commits a batch (LISTEN on the
// chatd_outbox channel), with the committing node's Config.NodeID, until
// ctx is done; then it returns nil. It holds its own connection outside the
// pool, and on any error logs it, waits with exponential backoff and
// reconnects. wake is also called after every (re)connect, with an empty
// node id, since notifications sent while disconnected are lost. wake runs
// on ListenOutbox's goroutine and should not block (e.g. a non-blocking
// send on a 1-buffered channel). Failed reconnects during an outage are
// logged once and then counted (internal/logsample).
func (s *Store) ListenOutbox(ctx context.Context, wake func(node string)) error {
	warn := logsample.New(s.log, logsample.Config{})
	defer warn.Flush()
	backoff := listenBackoffMin
	for {
		connected, err := s.listenOnce(ctx, wake)
		if ctx.Err() != nil {
			return nil
		}
		if connected {
			// The last outage is over: its count goes out before this one.
			warn.Flush()
			backoff = listenBackoffMin
		}
		warn.Warn("outbox listener lost its connection; reconnecting", "err", err, "backoff", backoff)
		t := time.NewTimer(backoff/2 + rand.N(backoff/2+1))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
		backoff = min(backoff*2, listenBackoffMax)
	}
}

// listenOnce connects, listens and relays notifications until an error.
// connected reports whether LISTEN succeeded (to reset the backoff).
func (s *Store) listenOnce(ctx context.Context, wake func(node string)) (connected bool, err error) {
	conn, err := pgx.ConnectConfig(ctx, s.pool.Config().ConnConfig)
	if err != nil {
		return false, fmt.Errorf("listen: connect: %w", err)
	}
	defer func() {
		closeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		defer cancel()
		conn.Close(closeCtx) //nolint:errcheck // the connection is discarded either way
	}()
	if _, err := conn.Exec(ctx, "listen "+notifyChannel); err != nil {
		return false, fmt.Errorf("listen: %w", err)
	}
	wake("")
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
				return true, err
			}
			return true, fmt.Errorf("listen: wait: %w", err)
		}
		wake(n.Payload)
	}
}
