package store

import (
	"cmp"
	"context"
	"fmt"
	"slices"
)

// Delivered is how far a user's sessions acked a chat: every message up to
// Seq reached one of them live.
type Delivered struct {
	User, Chat string
	Seq        int64
}

// RecordDelivered moves each (user, chat) delivery position forward to its
// Seq in one statement; a position never moves back. Rows are written in
// key order, so nodes recording the same keys at once cannot deadlock.
func (s *Store) RecordDelivered(ctx context.Context, ds []Delivered) error {
	if len(ds) == 0 {
		return nil
	}
	ds = slices.Clone(ds)
	slices.SortFunc(ds, func(a, b Delivered) int {
		return cmp.Or(cmp.Compare(a.User, b.User), cmp.Compare(a.Chat, b.Chat), cmp.Compare(b.Seq, a.Seq))
	})
	// One row per key: an upsert may not touch a row twice.
	ds = slices.CompactFunc(ds, func(a, b Delivered) bool { return a.User == b.User && a.Chat == b.Chat })
	users, chats, seqs := make([]string, len(ds)), make([]string, len(ds)), make([]int64, len(ds))
	for i, d := range ds {
		users[i], chats[i], seqs[i] = d.User, d.Chat, d.Seq
	}
	_, err := s.pool.Exec(ctx, `insert into delivery_state (user_id, chat_id, upto_seq)
		select * from unnest($1::text[], $2::text[], $3::bigint[])
		on conflict (user_id, chat_id) do update set upto_seq = excluded.upto_seq
			where delivery_state.upto_seq < excluded.upto_seq`, users, chats, seqs)
	if err != nil {
		return fmt.Errorf("record delivery positions: %w", err)
	}
	return nil
}

// Reached returns, for each (users[i], chats[i]), the highest seq the user
// got live or has read: the greater of the delivery and read positions, 0
// for neither.
func (s *Store) Reached(ctx context.Context, users, chats []string) ([]int64, error) {
	rows, err := s.pool.Query(ctx, `select greatest(coalesce(d.upto_seq, 0), coalesce(r.upto_seq, 0))
		from unnest($1::text[], $2::text[]) with ordinality as k(user_id, chat_id, i)
		left join delivery_state d on d.user_id = k.user_id and d.chat_id = k.chat_id
		left join read_state r on r.user_id = k.user_id and r.chat_id = k.chat_id
		order by k.i`, users, chats)
	if err != nil {
		return nil, fmt.Errorf("read positions: %w", err)
	}
	defer rows.Close()
	out := make([]int64, 0, len(users))
	for rows.Next() {
		var n int64
		if err := rows.Scan(&n); err != nil {
			return nil, fmt.Errorf("read positions: %w", err)
		}
		out = append(out, n)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read positions: %w", err)
	}
	return out, nil
}

// Unread returns each user's unread count per chat (as GET /api/chats
// counts it), for the chats with any.
func (s *Store) Unread(ctx context.Context, users []string) (map[string]map[string]int64, error) {
	rows, err := s.pool.Query(ctx, `select my.user_id, c.id, unread.n
		from members my join chats c on c.id = my.chat_id
		left join read_state rs on rs.user_id = my.user_id and rs.chat_id = c.id
		cross join lateral (`+unreadCountSQL+`) unread
		where my.user_id = any($1) and unread.n > 0`, users)
	if err != nil {
		return nil, fmt.Errorf("count unread: %w", err)
	}
	defer rows.Close()
	out := make(map[string]map[string]int64, len(users))
	for rows.Next() {
		var user, chat string
		var n int64
		if err := rows.Scan(&user, &chat, &n); err != nil {
			return nil, fmt.Errorf("count unread: %w", err)
		}
		if out[user] == nil {
			out[user] = map[string]int64{}
		}
		out[user][chat] = n
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("count unread: %w", err)
	}
	return out, nil
}
