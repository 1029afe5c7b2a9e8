package store

import (
	"context"
	"fmt"
	"time"
)

// RecordLastSeen stores that user was last online at at, unless a later
// time is stored already: every node that sees a user go offline records
// it, in any order, and the latest wins.
func (s *Store) RecordLastSeen(ctx context.Context, user string, at time.Time) error {
	_, err := s.pool.Exec(ctx, `insert into last_seen (user_id, seen_at) values ($1, $2)
		on conflict (user_id) do update set seen_at = greatest(last_seen.seen_at, excluded.seen_at)`, user, at)
	if err != nil {
		return fmt.Errorf("record last seen of %s: %w", user, err)
	}
	return nil
}

// LastSeen returns when each of users was last online, for those with a
// record; a user never seen offline is absent from the map.
func (s *Store) LastSeen(ctx context.Context, users []string) (map[string]time.Time, error) {
	rows, err := s.pool.Query(ctx, `select user_id, seen_at from last_seen where user_id = any($1)`, users)
	if err != nil {
		return nil, fmt.Errorf("last seen: %w", err)
	}
	defer rows.Close()
	out := make(map[string]time.Time, len(users))
	for rows.Next() {
		var u string
		var at time.Time
		if err := rows.Scan(&u, &at); err != nil {
			return nil, fmt.Errorf("last seen: %w", err)
		}
		out[u] = at
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("last seen: %w", err)
	}
	return out, nil
}
