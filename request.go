package chatd

import (
	"encoding/json"
	"fmt"
	"time"
)

// SendRequest is one event a client asks to store: a message or, with Kind
// set, an edit, delete or reaction of one (docs/protocol.md "Events (v2)").
// pkg/api builds it from a frame or a REST body, pkg/ingest checks it
// (Check) and queues it, and pkg/store commits it (Message): one type from
// the edge to the database, so a new field of a message is added here, in
// its JSON (pkg/codec) and where it is stored.
type SendRequest struct {
	Chat, From, Device, CID, Body string

	Kind   EventKind       // "" or EventMessage: a message
	Target string          // edit, delete, reaction: the message's id
	Meta   json.RawMessage // message: optional JSON object as the client encoded it
	Emoji  string          // reaction
	On     bool            // reaction: add (true) or remove

	// System marks a message the admin API posts (docs/integrations.md,
	// "Bots and services"): From need not be a member of the chat. Messages only.
	System bool
}

// SendResult is the outcome of one SendRequest. Err is nil when the event
// is durably accepted (Message holds its id, seq and ts); Duplicate reports
// a resend of an already stored (From, CID) for the same chat, answered with
// the original. Otherwise Err wraps ErrNotFound, ErrForbidden,
// ErrCIDConflict (the cid names an event of another chat or kind),
// ErrTooLarge (the envelope would not fit the delivery stream) or
// ErrUnavailable (the batch's transaction failed: resend with the same cid).
type SendResult struct {
	Message   Message
	Duplicate bool
	Err       error
}

// Check is the one validation of a request, which every path to the store
// (WebSocket and REST) goes through: ids, the body against maxBodyBytes,
// meta, emoji and the fields each kind carries. It clears the fields r's
// kind does not carry and replaces r.Meta with its compact form. It returns
// an error wrapping ErrInvalid or ErrTooLarge, whose text is the client's.
// Rules that need the stored target (author, chat, deleted) are the
// store's, decided in the committing transaction.
func (r *SendRequest) Check(maxBodyBytes int) error {
	switch {
	case !ValidChatID(r.Chat):
		return fmt.Errorf("chat id %q is not 1-%d chars of [A-Za-z0-9_-]: %w", r.Chat, MaxChatIDLen, ErrInvalid)
	case !ValidCID(r.CID):
		return fmt.Errorf("cid %q is not 1-%d chars of [A-Za-z0-9_-]: %w", r.CID, MaxCIDLen, ErrInvalid)
	case !ValidUserID(r.From):
		return fmt.Errorf("sender %q: %w", r.From, ErrInvalid)
	case !ValidDeviceID(r.Device):
		return fmt.Errorf("device %q: %w", r.Device, ErrInvalid)
	}
	kind := r.Kind.Normal()
	if r.System && kind != EventMessage {
		return fmt.Errorf("a system send is a message, not a %s: %w", kind, ErrInvalid)
	}
	if kind != EventMessage {
		if len(r.Meta) > 0 {
			return fmt.Errorf("meta is carried by messages only, not by a %s: %w", kind, ErrInvalid)
		}
		if !ValidChatID(r.Target) {
			return fmt.Errorf("%s: target %.80q is not a message id: %w", kind, r.Target, ErrInvalid)
		}
	}
	switch kind {
	case EventMessage:
		// The body before meta: a send with both wrong is answered about
		// its body, as it always was.
		if err := CheckBody(r.Body, maxBodyBytes); err != nil {
			return err
		}
		meta, err := CheckMeta(r.Meta)
		if err != nil {
			return err
		}
		r.Kind, r.Target, r.Meta, r.Emoji, r.On = "", "", meta, "", false
		return nil
	case EventEdit:
		r.Emoji, r.On = "", false
		return CheckBody(r.Body, maxBodyBytes)
	case EventDelete:
		r.Body, r.Emoji, r.On = "", "", false
		return nil
	case EventReaction:
		r.Body = ""
		return CheckEmoji(r.Emoji)
	}
	return fmt.Errorf("unknown event kind %.32q: %w", r.Kind, ErrInvalid)
}

// Message is the event r stores as id at seq and ts, with the event fields
// as the wire carries them: no kind for a message, meta only on messages,
// emoji and on only on reactions. r must have passed Check.
func (r *SendRequest) Message(id string, seq int64, ts time.Time) Message {
	m := Message{ID: id, CID: r.CID, Chat: r.Chat, From: r.From, Body: r.Body, Seq: seq, TS: ts, Device: r.Device}
	if r.Kind.Normal() == EventMessage {
		m.Meta = r.Meta
		return m
	}
	m.Kind, m.Target = r.Kind, r.Target
	if r.Kind == EventReaction {
		on := r.On
		m.Emoji, m.On = r.Emoji, &on
	}
	return m
}
