package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/chatd/chatd"
	"github.com/jackc/pgx/v5"
	"github.com/oklog/ulid/v2"
)

// CreateGroupChat creates a group chat with a new ULID id. The creator is
// always a member; members are deduplicated. A bad user id or a title over
// chatd.MaxTitleLen (or text chatd.CheckText refuses) is chatd.ErrInvalid; more members, the
// creator included, than Config.MaxGroupMembers is chatd.ErrTooManyMembers.
func (s *Store) CreateGroupChat(ctx context.Context, creator, title string, members []string) (chatd.Chat, error) {
	all, err := memberSet(creator, members)
	if err != nil {
		return chatd.Chat{}, fmt.Errorf("create group chat: %w", err)
	}
	if len(all) > s.maxGroupMembers {
		return chatd.Chat{}, fmt.Errorf("create group chat: %d members, the creator included; a group may have at most %d: %w",
			len(all), s.maxGroupMembers, chatd.ErrTooManyMembers)
	}
	if err := chatd.CheckTitle(title); err != nil {
		return chatd.Chat{}, fmt.Errorf("create group chat: %w", err)
	}
	c := chatd.Chat{ID: ulid.Make().String(), Kind: chatd.KindGroup, Title: title, Members: all}
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx,
			`insert into chats (id, kind, title) values ($1, 'group', $2) returning created_at`,
			c.ID, title).Scan(&c.CreatedAt)
		if err != nil {
			return err
		}
		if _, err = tx.Exec(ctx,
			`insert into members (chat_id, user_id) select $1, unnest($2::text[])`, c.ID, all); err != nil {
			return err
		}
		return s.recordMember(ctx, tx, c.ID, chatd.ChangeCreated, creator, all)
	})
	if err != nil {
		return chatd.Chat{}, fmt.Errorf("create group chat: %w", err)
	}
	c.CreatedAt = c.CreatedAt.UTC()
	return c, nil
}

// memberSet validates creator and members and returns them deduplicated and sorted.
func memberSet(creator string, members []string) ([]string, error) {
	all := append([]string{creator}, members...)
	for _, u := range all {
		if !chatd.ValidUserID(u) {
			return nil, fmt.Errorf("user id %q: %w", u, chatd.ErrInvalid)
		}
	}
	slices.Sort(all)
	return slices.Compact(all), nil
}

// DirectChatID is the stable id of the direct chat between a and b, the same
// for either argument order: "d_" and 40 hex digits of a SHA-256 over the
// ordered pair.
func DirectChatID(a, b string) string {
	lo, hi := min(a, b), max(a, b)
	sum := sha256.Sum256([]byte(lo + "\x00" + hi))
	return "d_" + hex.EncodeToString(sum[:])[:40]
}

// DirectChat returns the direct chat between a and b, creating it on first
// use (created reports that). Concurrent calls for one pair are safe and all
// return the same chat. a == b or a bad id is chatd.ErrInvalid.
func (s *Store) DirectChat(ctx context.Context, a, b string) (chatd.Chat, bool, error) {
	for _, u := range []string{a, b} {
		if err := chatd.CheckUserID("direct chat: user", u); err != nil {
			return chatd.Chat{}, false, err
		}
	}
	if a == b {
		return chatd.Chat{}, false, fmt.Errorf("direct chat: %q with itself; a direct chat is with another user: %w", a, chatd.ErrInvalid)
	}
	id := DirectChatID(a, b)
	created := false
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		// A racing caller's insert blocks here until it commits, then this one
		// does nothing: both end up reading the one committed chat.
		tag, err := tx.Exec(ctx,
			`insert into chats (id, kind) values ($1, 'direct') on conflict (id) do nothing`, id)
		if err != nil {
			return err
		}
		if created = tag.RowsAffected() == 1; !created {
			return nil
		}
		if _, err = tx.Exec(ctx,
			`insert into members (chat_id, user_id) values ($1, $2), ($1, $3)`, id, a, b); err != nil {
			return err
		}
		return s.recordMember(ctx, tx, id, chatd.ChangeCreated, a, []string{min(a, b), max(a, b)})
	})
	if err != nil {
		return chatd.Chat{}, false, fmt.Errorf("direct chat: %w", err)
	}
	c, err := s.Chat(ctx, id)
	if err != nil {
		return chatd.Chat{}, false, fmt.Errorf("direct chat: %w", err)
	}
	return c, created, nil
}

// chatColumns and scanChat read a chat with its members aggregated in
// user-id order (by bytes, as Go sorts, whatever the database's collation);
// scanChat scans any columns selected after them into extra.
const chatColumns = `c.id, c.kind, c.title, c.last_seq, c.created_at,
	coalesce((select array_agg(m.user_id order by m.user_id collate "C") from members m where m.chat_id = c.id), '{}')`

func scanChat(row pgx.Row, extra ...any) (chatd.Chat, error) {
	var c chatd.Chat
	var kind string
	dest := append([]any{&c.ID, &kind, &c.Title, &c.LastSeq, &c.CreatedAt, &c.Members}, extra...)
	if err := row.Scan(dest...); err != nil {
		return chatd.Chat{}, err
	}
	c.Kind = chatd.ChatKind(kind)
	c.CreatedAt = c.CreatedAt.UTC()
	return c, nil
}

// Chat returns the chat with its members, or chatd.ErrNotFound. It does not
// check who asks; callers check membership with IsMember.
func (s *Store) Chat(ctx context.Context, id string) (chatd.Chat, error) {
	return getChat(ctx, s.pool, id)
}

// querier is what both the pool and a transaction offer.
type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

func getChat(ctx context.Context, q querier, id string) (chatd.Chat, error) {
	c, err := scanChat(q.QueryRow(ctx, `select `+chatColumns+` from chats c where c.id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return chatd.Chat{}, fmt.Errorf("chat %s: %w", id, chatd.ErrNotFound)
	}
	if err != nil {
		return chatd.Chat{}, fmt.Errorf("chat %s: %w", id, err)
	}
	return c, nil
}

// ListChats returns the chats user is a member of, oldest first, each with
// user's read position and unread count (chatd.UserChat).
//
// It is one statement however many chats the user has, and each chat's
// count is a range of the (chat_id, seq) index carrying sender (migration
// 004): its cost is the number of messages after the read position, not the
// chat's length, and a chat read to the end costs one index descent.
func (s *Store) ListChats(ctx context.Context, user string) ([]chatd.UserChat, error) {
	rows, err := s.pool.Query(ctx, listChatsSQL, user)
	if err != nil {
		return nil, fmt.Errorf("list chats: %w", err)
	}
	chats, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (chatd.UserChat, error) {
		var uc chatd.UserChat
		var err error
		uc.Chat, err = scanChat(r, &uc.ReadSeq, &uc.Unread)
		return uc, err
	})
	if err != nil {
		return nil, fmt.Errorf("list chats: %w", err)
	}
	return chats, nil
}

// listChatsSQL is ListChats' statement; $1 is the user.
const listChatsSQL = `select ` + chatColumns + `, coalesce(rs.upto_seq, 0), unread.n
	from members my join chats c on c.id = my.chat_id
	left join read_state rs on rs.user_id = my.user_id and rs.chat_id = c.id
	cross join lateral (` + unreadCountSQL + `) unread
	where my.user_id = $1
	order by c.created_at, c.id`

// unreadCountSQL counts, inside listChatsSQL, the messages of chat c from
// others than my.user_id after the read position rs, of kind 'message' and
// not deleted (protocol "Events (v2)"). Migration 005 put kind and deleted
// into the (chat_id, seq) index so the count stays index-only.
const unreadCountSQL = `select count(*) as n from history h
		where h.chat_id = c.id
		  and h.seq > coalesce(rs.upto_seq, 0)
		  and h.sender <> my.user_id
		  and h.kind = 'message' and not h.deleted`

// IsMember returns nil when user is a member of the chat, chatd.ErrNotFound
// when the chat does not exist and chatd.ErrForbidden otherwise.
func (s *Store) IsMember(ctx context.Context, chatID, user string) error {
	return isMember(ctx, s.pool, chatID, user)
}

func isMember(ctx context.Context, q querier, chatID, user string) error {
	var chatExists, member bool
	err := q.QueryRow(ctx, `select
		exists (select 1 from chats where id = $1),
		exists (select 1 from members where chat_id = $1 and user_id = $2)`,
		chatID, user).Scan(&chatExists, &member)
	switch {
	case err != nil:
		return fmt.Errorf("membership of %s in %s: %w", user, chatID, err)
	case !chatExists:
		return fmt.Errorf("chat %s: %w", chatID, chatd.ErrNotFound)
	case !member:
		return fmt.Errorf("%s is not a member of %s: %w", user, chatID, chatd.ErrForbidden)
	}
	return nil
}

// AddMember adds user to a group chat on behalf of actor, who must be a
// member (chatd.ErrForbidden). Adding a present member changes nothing.
// Direct chats refuse with chatd.ErrConflict, a full group (Config.
// MaxGroupMembers) with chatd.ErrTooManyMembers. It returns the updated chat.
func (s *Store) AddMember(ctx context.Context, chatID, actor, user string) (chatd.Chat, error) {
	if actor == "" { // never a member; "" is the admin API's own
		return chatd.Chat{}, fmt.Errorf("add member: no actor: %w", chatd.ErrForbidden)
	}
	return s.addMember(ctx, chatID, actor, user)
}

// addMember is AddMember; an empty actor is the admin API (chats_admin.go),
// which needs no membership.
func (s *Store) addMember(ctx context.Context, chatID, actor, user string) (chatd.Chat, error) {
	if !chatd.ValidUserID(user) {
		return chatd.Chat{}, fmt.Errorf("add member %q: %w", user, chatd.ErrInvalid)
	}
	var c chatd.Chat
	err := s.changeMembers(ctx, chatID, actor, func(tx pgx.Tx) error {
		// The chat row is locked: no concurrent add can pass the count too.
		var n int
		var present bool
		if err := tx.QueryRow(ctx, `select count(*), coalesce(bool_or(user_id = $2), false)
			from members where chat_id = $1`, chatID, user).Scan(&n, &present); err != nil {
			return err
		}
		if !present && n >= s.maxGroupMembers {
			return fmt.Errorf("chat %s has %d members, the most a group may have: remove one first: %w",
				chatID, n, chatd.ErrTooManyMembers)
		}
		tag, err := tx.Exec(ctx, `insert into members (chat_id, user_id) values ($1, $2)
			on conflict do nothing`, chatID, user)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 1 {
			if err := s.recordMember(ctx, tx, chatID, chatd.ChangeAdded, actor, []string{user}); err != nil {
				return err
			}
		}
		c, err = getChat(ctx, tx, chatID)
		return err
	})
	if err != nil {
		return chatd.Chat{}, fmt.Errorf("add member: %w", err)
	}
	return c, nil
}

// RemoveMember removes user from a group chat on behalf of actor, who must be
// a member (a member may remove itself). Removing a non-member is a no-op.
// Direct chats refuse with chatd.ErrConflict.
func (s *Store) RemoveMember(ctx context.Context, chatID, actor, user string) error {
	if actor == "" { // never a member; "" is the admin API's own
		return fmt.Errorf("remove member: no actor: %w", chatd.ErrForbidden)
	}
	return s.removeMember(ctx, chatID, actor, user)
}

// removeMember is RemoveMember; an empty actor is the admin API.
func (s *Store) removeMember(ctx context.Context, chatID, actor, user string) error {
	err := s.changeMembers(ctx, chatID, actor, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `delete from members where chat_id = $1 and user_id = $2`, chatID, user)
		if err != nil || tag.RowsAffected() == 0 {
			return err
		}
		return s.recordMember(ctx, tx, chatID, chatd.ChangeRemoved, actor, []string{user})
	})
	if err != nil {
		return fmt.Errorf("remove member: %w", err)
	}
	return nil
}

// changeMembers runs change in a transaction that holds the chat row's lock,
// the same lock CommitBatch takes, so every message's frozen recipient set is
// the membership at one point between changes. An empty actor skips the
// membership check (the admin API acts for the application, not a member).
func (s *Store) changeMembers(ctx context.Context, chatID, actor string, change func(pgx.Tx) error) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var kind string
		err := tx.QueryRow(ctx, `select kind from chats where id = $1 for no key update`, chatID).Scan(&kind)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("chat %s: %w", chatID, chatd.ErrNotFound)
		}
		if err != nil {
			return err
		}
		if actor != "" {
			if err := isMember(ctx, tx, chatID, actor); err != nil {
				return err
			}
		}
		if chatd.ChatKind(kind) == chatd.KindDirect {
			return fmt.Errorf("chat %s is direct: %w", chatID, chatd.ErrConflict)
		}
		return change(tx)
	})
}

// timeUTC normalises a time read from or written to PostgreSQL: UTC and
// microsecond precision (what timestamptz keeps), so a value handed back at
// acceptance equals the one read from history later.
func timeUTC(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

// SetChatRetention sets how long the chat's history is kept; 0 restores the
// server default. A retention shorter than Config.MinChatRetention (the
// delivery stream's max age) is chatd.ErrInvalid: a message the stream still
// holds, or a recipient may still need to recover, would be gone from
// history. An unknown chat is chatd.ErrNotFound. It does not check who asks.
func (s *Store) SetChatRetention(ctx context.Context, chatID string, retention time.Duration) error {
	if retention < 0 || (retention > 0 && retention < s.minChatRetention) {
		return fmt.Errorf("chat retention %v is shorter than the delivery stream's max age %v: set at least %v, or 0 for the server default: %w",
			retention, s.minChatRetention, s.minChatRetention, chatd.ErrInvalid)
	}
	var arg *int64 // null: the server default
	if retention > 0 {
		us := retention.Microseconds()
		arg = &us
	}
	tag, err := s.pool.Exec(ctx,
		`update chats set retention = $2::bigint * interval '1 microsecond' where id = $1`, chatID, arg)
	if err != nil {
		return fmt.Errorf("set retention of %s: %w", chatID, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("chat %s: %w", chatID, chatd.ErrNotFound)
	}
	return nil
}
