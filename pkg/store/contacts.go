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
