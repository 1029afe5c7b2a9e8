package chatd

import "time"

// SignalKind says what a Signal reports.
type SignalKind string

// Signal kinds (docs/protocol.md "Events (v2)").
const (
	SignalTyping   SignalKind = "typing"
	SignalReceipt  SignalKind = "receipt"
	SignalPresence SignalKind = "presence"
)

// Signal is an ephemeral fact for live connections: someone is typing, has
// read a chat, came online or went offline. Unlike a Message it is never
// stored in the outbox nor acked; it is delivered at most once, best effort,
// to the live connections of the users in To on every node.
//
// To carries the recipients so that a receiving node needs no store lookup:
// the sender already knew the chat's members (it checked membership), and a
// member list of at most a few hundred ids is cheaper on the wire than one
// query per signal on every node.
type Signal struct {
	Kind SignalKind `json:"kind"`
	Chat string     `json:"chat,omitempty"` // typing, receipt
	User string     `json:"user"`           // who typed, read, came or went
	// SkipDevice, when set, is the device of User whose connections must
	// not get the signal (the one that sent the `read`). Typing skips all of
	// User's devices instead, so it leaves this empty and To without User.
	SkipDevice string    `json:"skip_device,omitempty"`
	Upto       string    `json:"upto,omitempty"` // receipt
	Seq        int64     `json:"seq,omitempty"`  // receipt
	Online     bool      `json:"online,omitempty"`
	LastSeen   time.Time `json:"last_seen,omitzero"` // presence, when offline
	To         []string  `json:"to"`
}

// Presence is what the cluster knows of a user's presence: Online while any
// node holds a session of one of the user's devices; otherwise LastSeen is
// when the last one ended (zero when this node never saw the user online).
type Presence struct {
	Online   bool
	LastSeen time.Time
}
