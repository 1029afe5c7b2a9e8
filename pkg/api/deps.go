package api

import (
	"context"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/pkg/push"
)

// Chats is the chat and history storage the API reads and changes.
// *store.Store implements it. Errors wrap chatd.ErrNotFound (unknown chat),
// chatd.ErrForbidden (actor not a member), chatd.ErrInvalid (bad input) or
// chatd.ErrConflict (e.g. adding a member to a direct chat).
type Chats interface {
	CreateGroupChat(ctx context.Context, creator, title string, members []string) (chatd.Chat, error)
	// DirectChat returns the one chat of the pair, creating it on first use
	// (created reports that).
	DirectChat(ctx context.Context, a, b string) (chat chatd.Chat, created bool, err error)
	Chat(ctx context.Context, id string) (chatd.Chat, error)
	// ListChats returns user's chats with user's read_seq and unread count.
	ListChats(ctx context.Context, user string) ([]chatd.UserChat, error)
	// MembersRead returns each listed chat's members' read positions
	// (user → seq), only for members who have read something.
	MembersRead(ctx context.Context, chatIDs []string) (map[string]map[string]int64, error)
	AddMember(ctx context.Context, chatID, actor, user string) (chatd.Chat, error)
	RemoveMember(ctx context.Context, chatID, actor, user string) error
	// AdminAddMember and AdminRemoveMember are AddMember and RemoveMember
	// for the admin API, which needs no membership (rest_admin_chats.go).
	AdminAddMember(ctx context.Context, chatID, user string) (chatd.Chat, error)
	AdminRemoveMember(ctx context.Context, chatID, user string) error
	// IsMember returns nil, chatd.ErrNotFound or chatd.ErrForbidden.
	IsMember(ctx context.Context, chatID, user string) error
	// History does not check membership; the API calls IsMember first.
	History(ctx context.Context, chatID string, q chatd.HistoryQuery) (msgs []chatd.Message, more bool, err error)
	// Message returns one event of the chat, a message in its current
	// state; chatd.ErrNotFound when it is not in this chat. It does not
	// check membership either.
	Message(ctx context.Context, chatID, msgID string) (chatd.Message, error)
	// MarkRead stores user's read position in the chat and returns the
	// position now stored, which stays newer when uptoMsgID is older.
	MarkRead(ctx context.Context, user, chatID, uptoMsgID string) (chatd.ReadPosition, error)
}

// Ingester is the accept path. *ingest.Ingest implements it.
type Ingester interface {
	// Submit checks req (chatd.SendRequest.Check, the one validation of
	// every path) and queues it without blocking; done is called exactly
	// once after the send's batch committed or failed, unless Submit returns
	// an error. done must not block.
	Submit(req chatd.SendRequest, done func(chatd.SendResult)) error
	// Send is the blocking form of Submit, for REST.
	Send(ctx context.Context, req chatd.SendRequest) (chatd.SendResult, error)
}

// Deliverer is live delivery on this node. *push.Registry implements it.
type Deliverer interface {
	// Attach registers c for live delivery, first closing an older session
	// of the same user and device with push.ReasonSuperseded. It fails
	// (registering nothing) while Ready would fail.
	Attach(c push.Conn) error
	// Ready is nil while a session registered now gets live delivery (the
	// node's consumer exists and NATS answers). It does no I/O.
	Ready() error
	// Detach withdraws c; a no-op when c is no longer the registered session.
	Detach(c push.Conn)
	// Ack records that c's client holds the messages with these ids.
	Ack(c push.Conn, ids []string)
	// Conns returns the connections registered on this node for the users
	// listed; AllConns returns every one. The gateway keeps no list of its
	// own.
	Conns(users ...string) []push.Conn
	AllConns() []push.Conn
}
