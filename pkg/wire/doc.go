// Package wire is chatd's WebSocket protocol in one place: the frame type
// names, event kinds, rejection and error codes, close codes, the frame
// shapes, and the one encoder and one decoder of each direction.
//
// Client → server frames are encoded by pkg/client (AppendClientFrame) and
// decoded by the server (DecodeClientFrame). Server → client frames are
// encoded by the server (AppendMsg, AppendAccepted, …) and decoded by
// pkg/client (DecodeServerFrame). Keeping both ends on the same code is what
// stops the two from drifting apart: before this package the protocol was
// written out twice, with plain strings.
//
// The names follow the wire contract (docs/protocol.md) and must never be
// renamed or dropped. The package imports only the root package chatd,
// pkg/codec (the msg object's JSON, shared with the stream envelope) and the
// standard library, so any client may use it without pulling in the server. Everything here is safe for concurrent use: there is no state.
package wire
