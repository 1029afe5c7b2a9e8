package forward

import (
	"encoding/json"
	"errors"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/pkg/store"
)

// request is a batch on its way to the leading node: the sends in the
// forwarding node's batch order.
type request struct {
	Sends []send `json:"sends"`
}

// send is a chatd.SendRequest on the wire.
type send struct {
	Chat   string          `json:"chat"`
	From   string          `json:"from"`
	Device string          `json:"device,omitempty"`
	CID    string          `json:"cid"`
	Body   string          `json:"body,omitempty"`
	Kind   chatd.EventKind `json:"kind,omitempty"`
	Target string          `json:"target,omitempty"`
	Meta   json.RawMessage `json:"meta,omitempty"`
	Emoji  string          `json:"emoji,omitempty"`
	On     bool            `json:"on,omitempty"`
	System bool            `json:"system,omitempty"`
}

func sendOf(r *chatd.SendRequest) send {
	return send{Chat: r.Chat, From: r.From, Device: r.Device, CID: r.CID, Body: r.Body, Kind: r.Kind,
		Target: r.Target, Meta: r.Meta, Emoji: r.Emoji, On: r.On, System: r.System}
}

func (s *send) request() chatd.SendRequest {
	return chatd.SendRequest{Chat: s.Chat, From: s.From, Device: s.Device, CID: s.CID, Body: s.Body, Kind: s.Kind,
		Target: s.Target, Meta: s.Meta, Emoji: s.Emoji, On: s.On, System: s.System}
}

// reply is the leading node's answer, one outcome per send, in order.
type reply struct {
	Outcomes []outcome `json:"outcomes"`
}

// outcome is one send's answer: the stored message (with its device,
// which the message's JSON leaves out), or an error by kind and text.
type outcome struct {
	Message    *chatd.Message `json:"msg,omitempty"`
	Device     string         `json:"device,omitempty"`
	OutboxID   int64          `json:"outbox_id,omitempty"`
	Recipients []string       `json:"recipients,omitempty"`
	Duplicate  bool           `json:"duplicate,omitempty"`
	ErrKind    string         `json:"err_kind,omitempty"` // chatd.ErrorName; empty for none
	Err        string         `json:"err,omitempty"`
}

// errUnknownKind is an error the leading node could not name (no domain
// error, chatd.ErrorName): the forwarding node commits that send itself.
var errUnknownKind = errors.New("an error the leading node could not name")

// remoteError is an error of the leading node: its text as it was, and
// its kind for errors.Is.
type remoteError struct {
	text string
	kind error
}

func (e *remoteError) Error() string { return e.text }
func (e *remoteError) Unwrap() error { return e.kind }

// encodeOutcome is o as the reply carries it; recipients only when
// withRecipients (a large group's list may not fit a NATS message).
func encodeOutcome(r chatd.SendResult, acc store.Accepted, withRecipients bool) outcome {
	if r.Err != nil {
		return outcome{ErrKind: chatd.ErrorName(r.Err), Err: r.Err.Error()}
	}
	m := r.Message
	o := outcome{Message: &m, Device: m.Device, OutboxID: acc.OutboxID, Duplicate: r.Duplicate}
	if withRecipients {
		o.Recipients = acc.Recipients
	}
	return o
}

// decode turns o back into the store's outcome of a forwarded send.
func (o *outcome) decode() store.Outcome {
	if o.Err != "" || o.Message == nil {
		kind := chatd.NamedError(o.ErrKind)
		if kind == nil {
			kind = errUnknownKind
		}
		return store.Outcome{Err: &remoteError{text: o.Err, kind: kind}}
	}
	m := *o.Message
	m.Device = o.Device
	return store.Outcome{Accepted: store.Accepted{Message: m, OutboxID: o.OutboxID, Recipients: o.Recipients,
		Duplicate: o.Duplicate, Forwarded: true}}
}
