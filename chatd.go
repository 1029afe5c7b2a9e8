// Package chatd holds the domain of the chat backend: messages, chats, the
// stream envelope that carries an accepted message to delivery, identifier
// rules and the domain errors every layer speaks. It imports nothing of ours,
// so every other package can depend on it without cycles.
package chatd

import (
	"encoding/json"
	"time"
)

// ChatKind tells a group chat from a direct (one-to-one) chat.
type ChatKind string

const (
	// KindGroup is a chat with any number of members; members may be added and removed.
	KindGroup ChatKind = "group"
	// KindDirect is a chat between exactly two users with one stable id per pair.
	KindDirect ChatKind = "direct"
)

// Chat is a conversation and its current members.
type Chat struct {
	ID      string   `json:"id"`
	Kind    ChatKind `json:"kind"`
	Title   string   `json:"title"`
	Members []string `json:"members"`
	// LastSeq is the seq of the newest accepted message (0 for an empty chat).
	LastSeq   int64     `json:"last_seq"`
	CreatedAt time.Time `json:"created_at"`
}

// Message is one accepted chat message. ID is its identity (a ULID, the
// client's dedupe key); Seq is its order inside the chat (gapless, commit
// order; docs/architecture.md, invariant 5). The JSON form is the `msg`
// object of the wire contract.
type Message struct {
	ID   string    `json:"id"`
	CID  string    `json:"cid"`
	Chat string    `json:"chat"`
	From string    `json:"from"`
	Body string    `json:"body"`
	Seq  int64     `json:"seq"`
	TS   time.Time `json:"ts"`
	// Device is the sending device; delivery skips it and only it.
	Device string `json:"-"`

	// Event fields (v2, docs/protocol.md "Events"); see events.go.
	Kind   EventKind       `json:"kind,omitempty"`
	Target string          `json:"target,omitempty"`
	Meta   json.RawMessage `json:"meta,omitempty"`
	Emoji  string          `json:"emoji,omitempty"`
	On     *bool           `json:"on,omitempty"`

	// Current state of a message, set only on reads from history.
	EditedAt  *time.Time          `json:"edited_at,omitempty"`
	Deleted   bool                `json:"deleted,omitempty"`
	Reactions map[string][]string `json:"reactions,omitempty"`
}

// Envelope is what the relay publishes to the delivery stream for one
// accepted message: the message and the recipients frozen at acceptance.
// OutboxID is the PostgreSQL outbox row it came from (the stream's
// Nats-Msg-Id, so a republish after a relay crash is dropped as a duplicate).
type Envelope struct {
	OutboxID   int64    `json:"outbox_id"`
	Message    Message  `json:"msg"`
	Device     string   `json:"device"`
	Recipients []string `json:"to"`
}
