package chatd

import "errors"

// Domain errors. Lower layers wrap them with context; only pkg/api maps them
// to HTTP statuses, `rejected` codes and close codes.
var (
	// ErrNotFound: the chat (or message) does not exist.
	ErrNotFound = errors.New("not found")
	// ErrForbidden: the caller is not a member of the chat.
	ErrForbidden = errors.New("forbidden")
	// ErrInvalid: the input breaks a rule (charset, length, missing field).
	ErrInvalid = errors.New("invalid")
	// ErrTooLarge: a body is over the configured maximum.
	ErrTooLarge = errors.New("too large")
	// ErrTooManyMembers: a group would have more members than the configured
	// maximum (every message's envelope carries the member list).
	ErrTooManyMembers = errors.New("too many members")
	// ErrConflict: the operation does not fit the chat (e.g. adding a member to a direct chat).
	ErrConflict = errors.New("conflict")
	// ErrCIDConflict: the sender already used this cid for another chat or
	// another kind of event (v2). A cid names one event of one sender; a
	// resend must repeat its chat and kind, and a new event needs a new cid.
	ErrCIDConflict = errors.New("cid conflict")
	// ErrOverloaded: a bounded queue is full; the request was not taken and may be retried.
	ErrOverloaded = errors.New("overloaded")
	// ErrRateLimited: the caller is over a rate or credit limit.
	ErrRateLimited = errors.New("rate limited")
	// ErrUnavailable: a dependency (PostgreSQL, NATS) failed; nothing was accepted.
	ErrUnavailable = errors.New("unavailable")
	// ErrOutcomeUnknown: the caller stopped waiting while its send's
	// transaction was committing, which cannot be recalled: the send may or
	// may not be stored. A resend with the same cid tells which.
	ErrOutcomeUnknown = errors.New("outcome unknown")
	// ErrClosed: the component is shutting down.
	ErrClosed = errors.New("closed")
)

// namedErrors are the domain errors by name, in the order ErrorName tries
// them (the more specific first, as pkg/api's statuses): one node tells
// another an outcome by name (pkg/forward), and the other gets back an
// error that errors.Is finds as it would its own.
var namedErrors = []struct {
	name string
	err  error
}{
	{"too_large", ErrTooLarge}, {"too_many_members", ErrTooManyMembers}, {"invalid", ErrInvalid},
	{"forbidden", ErrForbidden}, {"not_found", ErrNotFound}, {"cid_conflict", ErrCIDConflict},
	{"conflict", ErrConflict}, {"rate_limited", ErrRateLimited}, {"overloaded", ErrOverloaded},
	{"unavailable", ErrUnavailable}, {"outcome_unknown", ErrOutcomeUnknown}, {"closed", ErrClosed},
}

// ErrorName is the name of the domain error err wraps, or "" for none.
func ErrorName(err error) string {
	for _, n := range namedErrors {
		if errors.Is(err, n.err) {
			return n.name
		}
	}
	return ""
}

// NamedError is the domain error ErrorName calls name, or nil for a name
// it does not know.
func NamedError(name string) error {
	for _, n := range namedErrors {
		if n.name == name {
			return n.err
		}
	}
	return nil
}
