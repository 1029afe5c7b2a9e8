package store

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// relayLockKey is the advisory lock that elects the one relay per database
// (advisory locks are scoped to the database, so clusters shared by several
// databases elect one relay each).
const relayLockKey int64 = 0x63686174645f726c // "chatd_rl"

// RelayLock is a held relay election: a session advisory lock on a
// connection taken out of the pool for as long as it is held. It is safe for
// concurrent use.
type RelayLock struct {
	// unlock is the statement that gives this lock up: the relay's and the
	// webhook endpoints' locks live in different key spaces.
	unlock string
	key    []any
	mu     sync.Mutex
	conn   *pgx.Conn // nil once released
}

// TryRelayLock tries to become the relay without waiting. It returns
// (lock, true, nil) when this caller now holds it and (nil, false, nil) when
// another session does.
func (s *Store) TryRelayLock(ctx context.Context) (*RelayLock, bool, error) {
	return s.tryLock(ctx, "relay lock", `select pg_try_advisory_lock($1)`, `select pg_advisory_unlock($1)`, relayLockKey)
}

// tryLock takes a session advisory lock with lock (a pg_try_advisory_lock
// query of args) on a connection it hijacks from the pool while it holds it.
func (s *Store) tryLock(ctx context.Context, what, lock, unlock string, args ...any) (*RelayLock, bool, error) {
	pc, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, false, fmt.Errorf("%s: acquire: %w", what, err)
	}
	var got bool
	if err := pc.QueryRow(ctx, lock, args...).Scan(&got); err != nil {
		pc.Release()
		return nil, false, fmt.Errorf("%s: %w", what, err)
	}
	if !got {
		pc.Release()
		return nil, false, nil
	}
	// Hijack: the pool must never hand this session to anyone else or
	// reset it while the lock lives on it.
	return &RelayLock{unlock: unlock, key: args, conn: pc.Hijack()}, true, nil
}

// Check pings the connection that holds the lock. An error means the
// session, and with it the lock, may be lost: the holder must stop relaying
// and Release.
func (l *RelayLock) Check(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conn == nil {
		return fmt.Errorf("relay lock: released")
	}
	if err := l.conn.Ping(ctx); err != nil {
		return fmt.Errorf("relay lock: %w", err)
	}
	return nil
}

// Release gives the lock up and closes its connection. It unlocks
// explicitly first, so another node can take over at once (a closed
// session's locks go only when its backend has exited); if the unlock cannot
// be sent, closing the session still frees the lock. It is idempotent.
func (l *RelayLock) Release() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conn == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	l.conn.Exec(ctx, l.unlock, l.key...) //nolint:errcheck // the close below frees it anyway
	l.conn.Close(ctx)                    //nolint:errcheck // as above
	l.conn = nil
}
