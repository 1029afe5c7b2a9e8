package client

import (
	"errors"
	"fmt"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/pkg/wire"
)

// Errors returned by the client.
var (
	// ErrUnauthorized: chatd refused the token (HTTP 401 or close 4401).
	// Run stops retrying and returns it wrapped.
	ErrUnauthorized = errors.New("unauthorized")
	// ErrSuperseded: a newer session of the same user and device took over
	// (close 4003). Run stops and returns it wrapped; reconnecting would only
	// evict the other session in turn.
	ErrSuperseded = errors.New("superseded by a newer session")
	// ErrNotConnected: an operation that needs a live session (Read) was
	// called while there was none.
	ErrNotConnected = errors.New("not connected")
	// ErrPending: SendCID was called with a cid that another call is still
	// waiting on.
	ErrPending = errors.New("cid already pending")
)

// Close codes of the wire contract (pkg/wire's), as the plain ints that
// CloseError, State and Stats carry: those also hold codes the contract
// does not name (0, 1000, 1006).
const (
	CloseAbandoned    = int(wire.CloseAbandoned)
	CloseOverloaded   = int(wire.CloseOverloaded)
	CloseIdle         = int(wire.CloseIdle)
	CloseSuperseded   = int(wire.CloseSuperseded)
	CloseRate         = int(wire.CloseRate)
	CloseProtocol     = int(wire.CloseProtocol)
	CloseUnauthorized = int(wire.CloseUnauthorized)
)

// CloseReason names a close code; codes outside the contract read "close N",
// and 0 (the connection failed without a close frame) reads "network".
func CloseReason(code int) string {
	switch code {
	case 0:
		return "network"
	case 1000:
		return "normal"
	case 1006:
		return "abnormal"
	}
	return wire.CloseCode(code).String()
}

// RejectedError is a `rejected` answer to a send: the message was not stored.
// errors.Is matches it against the chatd domain error of its code
// (chatd.ErrOverloaded, chatd.ErrRateLimited, chatd.ErrForbidden,
// chatd.ErrNotFound, chatd.ErrInvalid, chatd.ErrTooLarge, chatd.ErrUnavailable).
type RejectedError struct {
	CID     string
	Code    wire.Code
	Message string
}

func (e *RejectedError) Error() string {
	return fmt.Sprintf("send %s rejected: %s: %s", e.CID, e.Code, e.Message)
}

// Unwrap returns the domain error of the code, or nil for an unknown code.
func (e *RejectedError) Unwrap() error {
	switch e.Code {
	case wire.CodeOverloaded:
		return chatd.ErrOverloaded
	case wire.CodeRateLimited:
		return chatd.ErrRateLimited
	case wire.CodeForbidden:
		return chatd.ErrForbidden
	case wire.CodeNotFound:
		return chatd.ErrNotFound
	case wire.CodeInvalid:
		return chatd.ErrInvalid
	case wire.CodeTooLarge:
		return chatd.ErrTooLarge
	case wire.CodeUnavailable:
		return chatd.ErrUnavailable
	}
	return nil
}

// Temporary reports whether the same send may succeed later (overloaded,
// rate_limited or unavailable); retry it with SendCID and the same cid.
func (e *RejectedError) Temporary() bool {
	return e.Code.Temporary()
}

// CloseError is how a session ended: the close code (0 when the connection
// failed without one) and the reason text the server sent.
type CloseError struct {
	Code   int
	Reason string
	Err    error
}

func (e *CloseError) Error() string {
	s := fmt.Sprintf("connection closed: %d %s", e.Code, CloseReason(e.Code))
	if e.Reason != "" {
		s += ": " + e.Reason
	}
	if e.Err != nil && e.Code == 0 {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap exposes ErrUnauthorized and ErrSuperseded for their codes.
func (e *CloseError) Unwrap() error {
	switch e.Code {
	case CloseUnauthorized:
		return ErrUnauthorized
	case CloseSuperseded:
		return ErrSuperseded
	}
	return e.Err
}
