// Package client is a Go client for chatd that keeps the client's side of the
// wire contract (protocol.md, "The client's side of the bargain"):
//
//  1. every `msg` frame is acked by id, duplicates included, batched within
//     Config.AckDelay into one `ack` frame;
//  2. messages are deduplicated by chat and seq across live delivery and
//     history, and the highest contiguous seq of each chat is the resume point;
//  3. after every `hello` each tracked chat's history is pulled from that
//     resume point (after_seq) to the end and merged with live frames by seq;
//     a live frame beyond a gap waits until the gap is filled, and a gap not
//     filled live within Config.GapWait is fetched from history;
//  4. an unanswered send is resent with the same cid after a reconnect;
//  5. the connection is re-established with exponential backoff and full
//     jitter after any close, except 4401 (unauthorized) and 4003 (superseded
//     by a newer session of the same device), which end Run with an error.
//
// With Config.TokenFunc the client also refreshes its token in-band before
// the token's exp (docs/protocol.md, "Token lifetime on an open WebSocket"),
// so a long-lived session is not closed with 4401 and keeps its connection.
//
// The application sees one ordered stream of events from Events: each chat's
// messages exactly once, in seq order (its own accepted sends included, so the
// stream is the chat log), connection state changes with the close code and
// its reason, and read receipts.
//
// A Client is safe for concurrent use. Run owns every goroutine the client
// starts and returns only after they have stopped; Send, SendCID, Read and the
// tracking methods may be called from any goroutine before or while Run runs.
//
// The package speaks only the wire contract: it imports no other chatd package
// except the root domain types.
package client
