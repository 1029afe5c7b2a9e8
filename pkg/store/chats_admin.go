package store

import (
	"context"

	"github.com/chatd/chatd"
)

// AdminAddMember is AddMember without an actor: the application's backend
// (the admin API) adds user to a group it need not be a member of. The
// rules of AddMember hold otherwise: direct chats refuse with
// chatd.ErrConflict, a full group with chatd.ErrTooManyMembers, an unknown
// chat is chatd.ErrNotFound.
func (s *Store) AdminAddMember(ctx context.Context, chatID, user string) (chatd.Chat, error) {
	return s.addMember(ctx, chatID, "", user)
}

// AdminRemoveMember is RemoveMember without an actor, for the admin API.
// Removing a non-member is a no-op; direct chats refuse with
// chatd.ErrConflict.
func (s *Store) AdminRemoveMember(ctx context.Context, chatID, user string) error {
	return s.removeMember(ctx, chatID, "", user)
}
