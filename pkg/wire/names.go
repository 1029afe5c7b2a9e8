package wire

import (
	"strconv"

	"github.com/chatd/chatd"
)

// FrameType is a frame's "type" field. A type names one frame shape per
// direction; typing is the one type used both ways (a client says it is
// typing, the server tells the others).
type FrameType string

// Client → server frame types.
const (
	FrameSend FrameType = "send"
	FrameAck  FrameType = "ack"
	FrameRead FrameType = "read"
	FramePing FrameType = "ping"

	// v2 (docs/protocol.md): events (events.go), typing (signals) and the
	// in-band token refresh (auth_frames.go).
	FrameEdit   FrameType = "edit"
	FrameDelete FrameType = "delete"
	FrameReact  FrameType = "react"
	FrameTyping FrameType = "typing" // also server → client
	FrameAuth   FrameType = "auth"   // accepted: see auth_frames.go
)

// Server → client frame types.
const (
	FrameHello    FrameType = "hello"
	FrameAccepted FrameType = "accepted"
	FrameRejected FrameType = "rejected"
	FrameMsg      FrameType = "msg"
	FrameReceipt  FrameType = "receipt"
	FramePong     FrameType = "pong"

	// v2: presence (signals) and the answer to an in-band token refresh.
	FramePresence FrameType = "presence"
	FrameAuthed   FrameType = "authed" // sent: see auth_frames.go
)

// Kind is an event's kind: the msg object's "kind" field (an absent kind
// is a message). It is the domain's chatd.EventKind, named here so that the
// wire vocabulary is complete in one place, not defined a second time.
type Kind = chatd.EventKind

// Event kinds (v2).
const (
	KindMessage  = chatd.EventMessage
	KindEdit     = chatd.EventEdit
	KindDelete   = chatd.EventDelete
	KindReaction = chatd.EventReaction
)

// Code is the "code" of a `rejected` frame and of every REST error body.
type Code string

// Codes of a `rejected` frame. The contract's set is closed: a client may
// switch over exactly these six.
const (
	CodeOverloaded  Code = "overloaded"
	CodeRateLimited Code = "rate_limited"
	CodeForbidden   Code = "forbidden"
	CodeNotFound    Code = "not_found"
	CodeInvalid     Code = "invalid"
	CodeTooLarge    Code = "too_large"
)

// Codes that REST error bodies carry (docs/protocol.md "REST details"); the
// server maps the failures behind them onto the closed set above before it
// writes a `rejected` frame, except CodeUnavailable, which a `rejected`
// frame carries too (an addition to the contract, docs/protocol.md
// "WebSocket details"): a send whose transaction failed because the database
// did (a primary lost, a failover) is not `overloaded`, which would tell the
// client the server is busy.
const (
	CodeTooManyMembers Code = "too_many_members"
	CodeConflict       Code = "conflict"
	CodeCIDConflict    Code = "cid_conflict"
	CodeUnavailable    Code = "unavailable"
	CodeUnauthorized   Code = "unauthorized"
	CodeInternal       Code = "internal"
)

// Temporary reports whether a send refused with c may succeed if resent
// later with the same cid: the server was busy, its database unavailable,
// or the client too fast.
func (c Code) Temporary() bool {
	return c == CodeOverloaded || c == CodeRateLimited || c == CodeUnavailable
}

// CloseCode is a WebSocket close code. It is an int, not a uint16, because
// the WebSocket library and the client's public API speak int.
type CloseCode int

// Close codes of the contract, and the standard going-away code the server
// closes with on shutdown or when it cannot deliver live.
const (
	CloseGoingAway    CloseCode = 1001
	CloseAbandoned    CloseCode = 4000 // did not ack in time
	CloseOverloaded   CloseCode = 4001 // too many un-acked, or not reading
	CloseIdle         CloseCode = 4002
	CloseSuperseded   CloseCode = 4003 // a newer session of the same user and device
	CloseRate         CloseCode = 4008 // rate or credit violation
	CloseProtocol     CloseCode = 4400
	CloseUnauthorized CloseCode = 4401
)

// String names the code for logs and reports; a code this package does not
// name reads "close N".
func (c CloseCode) String() string {
	switch c {
	case CloseGoingAway:
		return "going away"
	case CloseAbandoned:
		return "abandoned"
	case CloseOverloaded:
		return "overloaded"
	case CloseIdle:
		return "idle"
	case CloseSuperseded:
		return "superseded"
	case CloseRate:
		return "rate"
	case CloseProtocol:
		return "protocol"
	case CloseUnauthorized:
		return "unauthorized"
	}
	return "close " + strconv.Itoa(int(c))
}
