package store

import (
	"context"
	"fmt"
)

// Replication is what the primary says about its standbys.
type Replication struct {
	// Standbys counts the standbys streaming from this server
	// (pg_stat_replication's rows).
	Standbys int
	// SyncNames is synchronous_standby_names; empty means every standby is
	// asynchronous.
	SyncNames string
	// SyncCommit is synchronous_commit; "off" or "local" do not wait for
	// any standby, whatever SyncNames says.
	SyncCommit string
}

// Lossy reports whether a commit can be acknowledged before any standby has
// it, although there are standbys to fail over to: then an acked message
// can be missing on a promoted standby (docs/operations.md, "PostgreSQL
// failover").
func (r Replication) Lossy() bool {
	return r.Standbys > 0 && (r.SyncNames == "" || r.SyncCommit == "off" || r.SyncCommit == "local")
}

// Replication asks the server the store is connected to about its
// standbys.
func (s *Store) Replication(ctx context.Context) (Replication, error) {
	var r Replication
	err := s.pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM pg_stat_replication),
		current_setting('synchronous_standby_names'), current_setting('synchronous_commit')`).
		Scan(&r.Standbys, &r.SyncNames, &r.SyncCommit)
	if err != nil {
		return Replication{}, fmt.Errorf("replication state: %w", err)
	}
	return r, nil
}

// warnLossyReplication logs, once at open, when the primary acknowledges
// commits that its standbys may not have: an operator who set up a standby
// for failover likely expects it to hold every acked message, and it does
// not.
func (s *Store) warnLossyReplication(ctx context.Context) {
	r, err := s.Replication(ctx)
	if err != nil {
		s.log.Debug("cannot read the replication state", "err", err)
		return
	}
	if r.Lossy() {
		s.log.Warn("PostgreSQL has standbys but commits do not wait for them: an acked message can be lost if the primary fails over; set synchronous_standby_names (and synchronous_commit on) on the primary",
			"standbys", r.Standbys, "synchronous_standby_names", r.SyncNames, "synchronous_commit", r.SyncCommit)
	}
}
