package store

import (
	"context"
	"fmt"
)

// Contacts returns the users who share a chat of at most maxMembers members
// with user (user excluded), in no particular order: the audience of user's
// presence (docs/protocol.md "Events (v2)"). The size bound keeps presence
// out of large groups, where a status change would fan out to thousands.
// One statement on the members indexes: the user's chats, each counted by
// its primary key range.
func (s *Store) Contacts(ctx context.Context, user string, maxMembers int) ([]string, error) {
	rows, err := s.pool.Query(ctx, `select distinct o.user_id
		from members m
		join members o on o.chat_id = m.chat_id and o.user_id <> m.user_id
		where m.user_id = $1
		  and (select count(*) from members c where c.chat_id = m.chat_id) <= $2`, user, maxMembers)
	if err != nil {
		return nil, fmt.Errorf("contacts of %s: %w", user, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var u string
		if err := rows.Scan(&u); err != nil {
			return nil, fmt.Errorf("contacts of %s: %w", user, err)
		}
		out = append(out, u)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("contacts of %s: %w", user, err)
	}
	return out, nil
}

// ContactsAmong returns those of among who are user's contacts (see
// Contacts): who may see user's presence, and whose user may see. It
// asks only about among, so a user with thousands of contacts costs a
// lookup of a few rows, not all of them.
func (s *Store) ContactsAmong(ctx context.Context, user string, among []string, maxMembers int) ([]string, error) {
	rows, err := s.pool.Query(ctx, `select distinct o.user_id
		from members m
		join members o on o.chat_id = m.chat_id and o.user_id <> m.user_id
		where m.user_id = $1 and o.user_id = any($2)
		  and (select count(*) from members c where c.chat_id = m.chat_id) <= $3`, user, among, maxMembers)
	if err != nil {
		return nil, fmt.Errorf("contacts of %s among %d: %w", user, len(among), err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var u string
		if err := rows.Scan(&u); err != nil {
			return nil, fmt.Errorf("contacts of %s among %d: %w", user, len(among), err)
		}
		out = append(out, u)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("contacts of %s among %d: %w", user, len(among), err)
	}
	return out, nil
}
