// Package push delivers accepted messages to the connections on this node:
// the connection registry (one active session per user and device), each
// connection's pending set and pin, the node's durable JetStream consumer,
// client acks, and the reapers that withdraw stuck connections.
package push

// Reason says why push withdrew a connection from live delivery. Only pkg/api
// turns it into a WebSocket close code.
type Reason int

const (
	// ReasonAbandoned: a message reached its last delivery attempt and its lease expired un-acked.
	ReasonAbandoned Reason = iota + 1
	// ReasonOverloaded: more than max-pending messages were un-acked.
	ReasonOverloaded
	// ReasonIdle: no ping or pong within the idle timeout.
	ReasonIdle
	// ReasonSuperseded: a newer session of the same user and device registered.
	ReasonSuperseded
	// ReasonShutdown: the node is stopping.
	ReasonShutdown
	// ReasonResync: the node's consumer was lost (deleted by its inactive
	// threshold, a stream reset or an operator) and is being recreated; the
	// client resyncs from history.
	ReasonResync
	// ReasonUnavailable: the node cannot reach JetStream; the client should
	// reconnect, to another node if it can.
	ReasonUnavailable
)

// String names the reason for logs and metrics labels.
func (r Reason) String() string {
	switch r {
	case ReasonAbandoned:
		return "abandoned"
	case ReasonOverloaded:
		return "overloaded"
	case ReasonIdle:
		return "idle"
	case ReasonSuperseded:
		return "superseded"
	case ReasonShutdown:
		return "shutdown"
	case ReasonResync:
		return "resync"
	case ReasonUnavailable:
		return "unavailable"
	}
	return "unknown"
}

// Conn is one live client connection as push sees it. pkg/api implements it
// over a WebSocket. The connection object itself is the session's epoch: a
// decision taken against a Conn that is no longer registered is a no-op.
type Conn interface {
	// User and Device identify the session; they never change.
	User() string
	Device() string
	// Deliver queues a `msg` frame of m without blocking or writing; m is
	// shared with the message's other recipients and must not be changed.
	// It returns false when the connection's outbound queue is full or the
	// connection is closing; push then treats the message as not delivered
	// (its lease still runs). Push calls it under the registry's lock.
	Deliver(m *Outgoing) bool
	// Flush writes what Deliver queued, or leaves it to a writer already
	// at work. Push calls it after releasing the registry's lock, once for
	// each frame Deliver took, so the socket writes of a fan-out hold
	// nothing else up. It must not block.
	Flush()
	// Close ends the connection with the close code that reason maps to.
	// It must not block and may be called more than once.
	Close(reason Reason)
	// UserPresent is told that this connection is its user's first one
	// registered on this node (true), or that it was the last and has left
	// (false). It is called under the registry's lock, so one user's
	// changes arrive in the order they happened, and must not block.
	UserPresent(present bool)
}
