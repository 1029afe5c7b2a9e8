package client

import "github.com/chatd/chatd"

// EventKind says which field of an Event is set.
type EventKind int

const (
	// EventMessage: Message holds the next message of its chat, in seq order.
	EventMessage EventKind = iota + 1
	// EventState: the connection came up or went down.
	EventState
	// EventReceipt: someone read a chat up to a message (best effort, live only).
	EventReceipt
	// EventTyping: someone is typing in a chat (best effort, live only).
	EventTyping
	// EventPresence: a user came online or went offline (best effort, live only).
	EventPresence
)

func (k EventKind) String() string {
	switch k {
	case EventMessage:
		return "message"
	case EventState:
		return "state"
	case EventReceipt:
		return "receipt"
	case EventTyping:
		return "typing"
	case EventPresence:
		return "presence"
	}
	return "unknown"
}

// Via says how a message reached the client.
type Via int

const (
	// ViaLive: a `msg` frame.
	ViaLive Via = iota + 1
	// ViaHistory: a history page (resync after connect, or a gap fill).
	ViaHistory
	// ViaSelf: this client's own send, known from its `accepted` frame (the
	// server does not deliver a message to the device that sent it).
	ViaSelf
)

func (v Via) String() string {
	switch v {
	case ViaLive:
		return "live"
	case ViaHistory:
		return "history"
	case ViaSelf:
		return "self"
	}
	return "unknown"
}

// Event is one item of the Events stream. Kind says which field is set.
type Event struct {
	Kind    EventKind
	Message chatd.Message
	Via     Via
	State   State
	Receipt Receipt
	// Typing is set for EventTyping, Presence for EventPresence.
	Typing   Typing
	Presence Presence
}

// State is a connection change. On connect, Connected is true and User and
// Device come from `hello`. On disconnect, CloseCode is the close code (0 when
// the connection failed without one) and Reason its text, or the error.
type State struct {
	Connected bool
	User      string
	Device    string
	CloseCode int
	Reason    string
}

// Receipt is a `receipt` frame: User read Chat up to message Upto, whose
// seq is Seq (the user's read position; it never goes back).
type Receipt struct {
	Chat string `json:"chat"`
	User string `json:"user"`
	Upto string `json:"upto"`
	Seq  int64  `json:"seq"`
}
