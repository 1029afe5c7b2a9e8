// Package elect runs a task on the one node that holds a named lock (in
// chatd a PostgreSQL advisory lock on a connection of its own), and on
// another node once that one stops or its lock's connection fails.
package elect

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"time"
)

// Lock is a held election lock.
type Lock interface {
	// Check reports an error when the lock may be lost.
	Check(ctx context.Context) error
	// Release gives the lock up; it is idempotent.
	Release()
}

// Config is one election and the task its winner runs.
type Config struct {
	// What names the task in log lines: "notifier", "webhook".
	What string
	// Name is the lock's name, the same on every node.
	Name    string
	TryLock func(ctx context.Context, name string) (Lock, bool, error)
	// Standby is how often a node that does not lead tries to (give or
	// take a quarter), and how often the leader checks its lock.
	Standby time.Duration
	// Prepare runs once before the election, retried until it succeeds
	// (waits doubling from 100 ms up to Standby): what every node sets up
	// whether it leads or not. Nil: nothing.
	Prepare func(ctx context.Context) error
	// Lead runs while this node leads: again a second after it returns,
	// until its ctx ends (the lock lost, or Run's ctx ended).
	Lead func(ctx context.Context) error
	// Leading is told when this node starts and stops leading. Nil: nothing.
	Leading func(bool)
	Log     *slog.Logger
	// Warn logs failures that repeat while they last (a sampled logger's).
	Warn func(msg string, args ...any)
}

// Run prepares, then takes part in the election until ctx ends.
func Run(ctx context.Context, c Config) {
	for delay := 100 * time.Millisecond; c.Prepare != nil; delay = min(2*delay, c.Standby) {
		err := c.Prepare(ctx)
		if err == nil {
			break
		}
		c.Warn("set up the "+c.What+"; retrying (check NATS)", "err", err)
		if !Sleep(ctx, delay) {
			return
		}
	}
	for {
		lock, ok, err := c.TryLock(ctx, c.Name)
		if err != nil && ctx.Err() == nil {
			c.Warn(c.What+" election; retrying (check PostgreSQL)", "err", err)
		}
		if ok {
			lead(ctx, &c, lock)
			lock.Release()
		}
		if !Sleep(ctx, jitter(c.Standby)) {
			return
		}
	}
}

// lead runs the task while this node holds the lock: until ctx ends or
// the lock's connection fails.
func lead(ctx context.Context, c *Config, lock Lock) {
	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for Sleep(lctx, c.Standby) {
			if err := lock.Check(lctx); err != nil && lctx.Err() == nil {
				c.Log.Warn("lost the "+c.What+" election's connection; standing by (check PostgreSQL)", "err", err)
				cancel()
			}
		}
	}()
	defer func() { <-watched }()
	if c.Leading != nil {
		c.Leading(true)
		defer c.Leading(false)
	}
	for lctx.Err() == nil {
		if err := c.Lead(lctx); err != nil && lctx.Err() == nil {
			c.Warn(c.What+"; retrying (check NATS)", "err", err)
		}
		Sleep(lctx, time.Second)
	}
}

// Sleep waits d or until ctx ends; it reports whether ctx is still live.
// The elected tasks pause with it too.
func Sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// jitter is d give or take a quarter, so standby nodes do not retry in step.
func jitter(d time.Duration) time.Duration {
	q := int64(d / 4)
	if q <= 0 {
		return d
	}
	return d - time.Duration(q) + time.Duration(rand.Int64N(2*q))
}
