package chatd

import (
	"strconv"
	"time"
)

// Kinds of a chat change on a webhook: not events of a chat's seq log, but
// changes of who is in it and how far they read (docs/integrations.md,
// "Member changes and read receipts").
const (
	EventMember EventKind = "member"
	EventRead   EventKind = "read"
)

// What a member change did (ChatChange.Change).
const (
	ChangeCreated = "created" // the chat was created with Users as its members
	ChangeAdded   = "added"   // Users joined
	ChangeRemoved = "removed" // Users left or were removed
)

// ChatChange is a change of a chat's members (Kind EventMember) or of a
// member's read position (Kind EventRead), written in the same transaction
// as the change itself.
type ChatChange struct {
	// ID orders the changes: it increases with each one, and a chat's
	// changes of one kind are numbered in the order they took effect. It
	// is also the webhook-id's core, for deduplication.
	ID   int64     `json:"id"`
	Kind EventKind `json:"kind"`
	Chat string    `json:"chat_id"`
	// Change is ChangeCreated, ChangeAdded or ChangeRemoved for a member
	// change; empty for a read.
	Change string `json:"change,omitempty"`
	// Users are who joined or left (a member change), or the one member
	// whose read position moved (a read).
	Users []string `json:"users"`
	// By is who made a member change: the chat's creator (for a direct
	// chat, the user who opened it), or the member who added or removed;
	// empty when the admin API added or removed.
	By string `json:"by,omitempty"`
	// Seq and Upto are the read position: the seq and id of the newest
	// message read. Zero and empty for a member change.
	Seq  int64  `json:"seq,omitempty"`
	Upto string `json:"upto,omitempty"`
	// TS is when the change committed.
	TS time.Time `json:"ts"`
}

// Key names the change uniquely: its id and commit time (an id alone could
// be handed out again after a failover to a replica that had not seen it).
// The changes stream deduplicates by it; webhook-ids start with it.
func (c *ChatChange) Key() string {
	return "chg_" + strconv.FormatInt(c.ID, 10) + "_" + strconv.FormatInt(c.TS.UnixMicro(), 36)
}
