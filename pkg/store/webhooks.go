package store

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"

	"github.com/chatd/chatd"
	"github.com/jackc/pgx/v5"
)

// webhookLockClass is the first key of every webhook endpoint's advisory
// lock. The two-key form lives in a key space apart from the relay's
// one-key lock, so no endpoint's hash can collide with it.
const webhookLockClass int32 = 0x63686b77 // "chkw"

// TryWebhookLock tries, without waiting, to become the one node that
// delivers to the webhook endpoint named name (its consumer name). It
// returns (lock, true, nil) when this caller now holds it and (nil, false,
// nil) when another session does. The lock lives on a dedicated connection
// (not counted in Config.MaxConns), so it goes when this process dies.
// Two names whose 32-bit hashes collide share one election: harmless, one
// node then delivers to both.
func (s *Store) TryWebhookLock(ctx context.Context, name string) (*RelayLock, bool, error) {
	h := fnv.New32a()
	h.Write([]byte(name))
	key := int32(h.Sum32())
	return s.tryLock(ctx, "webhook lock "+name, `select pg_try_advisory_lock($1, $2)`, `select pg_advisory_unlock($1, $2)`,
		webhookLockClass, key)
}

// SetAsideWebhook stores an event that its endpoint did not accept within
// its attempts and returns the row's id.
func (s *Store) SetAsideWebhook(ctx context.Context, f chatd.WebhookFailure) (int64, error) {
	var id int64
	err := s.pool.QueryRow(ctx, `insert into webhook_failures
		(endpoint, url, webhook_id, chat_id, seq, message_id, kind, body, attempts, last_error)
		values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) returning id`,
		f.Endpoint, f.URL, f.WebhookID, f.Chat, f.Seq, f.MessageID, string(f.Kind), string(f.Body), f.Attempts, f.LastError,
	).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("set aside webhook event: %w", err)
	}
	return id, nil
}

const webhookFailureColumns = `id, endpoint, url, webhook_id, chat_id, seq, message_id, kind, body, attempts, last_error, failed_at`

// WebhookFailures lists set-aside webhook events oldest first, those with
// an id above after, at most limit of them; only endpoint's (a consumer
// name) unless it is empty.
func (s *Store) WebhookFailures(ctx context.Context, endpoint string, after int64, limit int) ([]chatd.WebhookFailure, error) {
	rows, err := s.pool.Query(ctx, `select `+webhookFailureColumns+`
		from webhook_failures where id > $1 and ($3 = '' or endpoint = $3) order by id limit $2`, after, limit, endpoint)
	if err != nil {
		return nil, fmt.Errorf("list webhook failures: %w", err)
	}
	out, err := pgx.CollectRows(rows, scanWebhookFailure)
	if err != nil {
		return nil, fmt.Errorf("list webhook failures: %w", err)
	}
	return out, nil
}

// CountWebhookFailures counts the set-aside webhook events, only
// endpoint's unless it is empty.
func (s *Store) CountWebhookFailures(ctx context.Context, endpoint string) (int64, error) {
	var n int64
	err := s.pool.QueryRow(ctx, `select count(*) from webhook_failures where $1 = '' or endpoint = $1`, endpoint).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count webhook failures: %w", err)
	}
	return n, nil
}

// WebhookFailure returns one set-aside webhook event; chatd.ErrNotFound
// when there is none with that id (never stored, or replayed since).
func (s *Store) WebhookFailure(ctx context.Context, id int64) (chatd.WebhookFailure, error) {
	rows, err := s.pool.Query(ctx, `select `+webhookFailureColumns+` from webhook_failures where id = $1`, id)
	if err != nil {
		return chatd.WebhookFailure{}, fmt.Errorf("read webhook failure %d: %w", id, err)
	}
	f, err := pgx.CollectExactlyOneRow(rows, scanWebhookFailure)
	if errors.Is(err, pgx.ErrNoRows) {
		return f, fmt.Errorf("webhook failure %d: %w", id, chatd.ErrNotFound)
	}
	if err != nil {
		return f, fmt.Errorf("read webhook failure %d: %w", id, err)
	}
	return f, nil
}

// DeleteWebhookFailure removes a set-aside event once a replay delivered it.
func (s *Store) DeleteWebhookFailure(ctx context.Context, id int64) error {
	if _, err := s.pool.Exec(ctx, `delete from webhook_failures where id = $1`, id); err != nil {
		return fmt.Errorf("delete webhook failure %d: %w", id, err)
	}
	return nil
}

func scanWebhookFailure(row pgx.CollectableRow) (chatd.WebhookFailure, error) {
	var f chatd.WebhookFailure
	var kind, body string
	err := row.Scan(&f.ID, &f.Endpoint, &f.URL, &f.WebhookID, &f.Chat, &f.Seq, &f.MessageID, &kind, &body,
		&f.Attempts, &f.LastError, &f.FailedAt)
	f.Kind, f.Body, f.FailedAt = chatd.EventKind(kind), []byte(body), f.FailedAt.UTC()
	return f, err
}
