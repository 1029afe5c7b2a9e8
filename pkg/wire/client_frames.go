package wire

import (
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/chatd/chatd"
)

// ErrProtocol marks a frame that breaks the framing itself (not JSON, not
// UTF-8, over max_frame_bytes). The server closes with 4400 on it; a client
// frame that is JSON but breaks a rule is chatd.ErrInvalid and only
// `rejected`.
var ErrProtocol = errors.New("protocol violation")

// maxEchoCID bounds the cid echoed in a `rejected` for an invalid send, so a
// malformed frame cannot make the server write back an arbitrarily long id.
const maxEchoCID = 256

// ClientFrame is one client → server frame. Only the fields of its Type are
// set; the zero values of the others are not sent.
type ClientFrame struct {
	Type FrameType
	Chat string   // send, read
	CID  string   // send
	Body string   // send
	Upto string   // read
	IDs  []string // ack

	Token string // auth (v2)
	// v2 events (events.go): send's meta; edit, delete and react.
	Target string          // edit, delete, react
	Meta   json.RawMessage // send, as the client encoded it; nil when absent
	Emoji  string          // react
	On     bool            // react
}

// clientJSON is the JSON shape of every client frame. Pointers tell a
// missing or null field from an empty one only where the rules need it;
// unknown fields are ignored so that clients may add their own (e.g.
// tracing ids).
type clientJSON struct {
	Type *string  `json:"type"`
	Chat *string  `json:"chat"`
	CID  *string  `json:"cid"`
	Body *string  `json:"body"`
	Upto *string  `json:"upto"`
	IDs  []string `json:"ids"`

	Token  *string         `json:"token"` // auth (v2)
	Target *string         `json:"target"`
	Meta   json.RawMessage `json:"meta"`
	Emoji  *string         `json:"emoji"`
	On     *bool           `json:"on"`
}

// DecodeClientFrame decodes and checks one client frame of at most
// maxFrameBytes; the server calls it for every frame it reads. It returns an
// error wrapping ErrProtocol when data is over the limit, not valid UTF-8 or
// not JSON, and one wrapping chatd.ErrInvalid when the frame is JSON but its
// type is unknown or a field is missing, mistyped or breaks the id rules. On an invalid send
// frame the returned ClientFrame still carries the cid (when it is a short
// string) for the `rejected` answer. Body size is not checked here:
// too_large is decided against the body limit by the caller.
func DecodeClientFrame(data []byte, maxFrameBytes int) (ClientFrame, error) {
	return decodeClientFrame(data, maxFrameBytes, true)
}

// decodeClientFrame is DecodeClientFrame; fast false skips the
// reflection-free decoder, for tests that prove the two agree.
func decodeClientFrame(data []byte, maxFrameBytes int, fast bool) (ClientFrame, error) {
	if len(data) > maxFrameBytes {
		return ClientFrame{}, fmt.Errorf("frame is %d bytes, the limit is %d: %w", len(data), maxFrameBytes, ErrProtocol)
	}
	// encoding/json would silently replace invalid UTF-8 with U+FFFD; a
	// frame that is not UTF-8 is not JSON text (RFC 8259), so it is refused
	// whole rather than stored altered.
	if !utf8.Valid(data) {
		return ClientFrame{}, fmt.Errorf("frame is not valid UTF-8: %w", ErrProtocol)
	}
	// The fast path's fields stay on the stack; encoding/json's (through
	// an interface) would move them to the heap for every frame if the two
	// paths shared one variable.
	var fw clientJSON
	if fast && decodeClientFast(data, &fw) {
		return decodeFields(&fw)
	}
	w := &clientJSON{}
	if err := json.Unmarshal(data, w); err != nil {
		var syn *json.SyntaxError
		if errors.As(err, &syn) {
			return ClientFrame{}, fmt.Errorf("frame is not JSON: %w", ErrProtocol)
		}
		// JSON, but not the shape of a frame (an array, a number where a
		// string belongs): a rule broken, not the framing.
		f := ClientFrame{}
		if w.Type != nil && (FrameType(*w.Type) == FrameSend || isEventFrame(FrameType(*w.Type))) {
			f = ClientFrame{Type: FrameType(*w.Type), CID: echoCID(w.CID)}
		}
		return f, fmt.Errorf("frame has a field of the wrong type: %w", chatd.ErrInvalid)
	}
	return decodeFields(w)
}

// decodeFields checks the decoded fields against the rules of the frame's type.
func decodeFields(w *clientJSON) (ClientFrame, error) {
	if w.Type == nil {
		return ClientFrame{}, fmt.Errorf("frame has no type: %w", chatd.ErrInvalid)
	}
	switch t := FrameType(*w.Type); t {
	case FrameSend:
		return decodeSend(w)
	case FrameAck:
		return decodeAck(w)
	case FrameRead:
		return decodeRead(w)
	case FramePing:
		return ClientFrame{Type: FramePing}, nil
	case FrameAuth:
		return decodeAuth(w)
	case FrameEdit, FrameDelete, FrameReact:
		return decodeEvent(w)
	case FrameTyping:
		return decodeTyping(w)
	default:
		return ClientFrame{}, fmt.Errorf("unknown frame type %.32q: %w", t, chatd.ErrInvalid)
	}
}

func decodeSend(w *clientJSON) (ClientFrame, error) {
	f := ClientFrame{Type: FrameSend, CID: echoCID(w.CID)}
	switch {
	case w.CID == nil || !chatd.ValidCID(*w.CID):
		return f, fmt.Errorf("send: cid must be 1-%d chars of [A-Za-z0-9_-]: %w", chatd.MaxCIDLen, chatd.ErrInvalid)
	case w.Chat == nil || !chatd.ValidChatID(*w.Chat):
		return f, fmt.Errorf("send: chat must be 1-%d chars of [A-Za-z0-9_-]: %w", chatd.MaxChatIDLen, chatd.ErrInvalid)
	case w.Body == nil || *w.Body == "":
		return f, fmt.Errorf("send: body is missing or empty: %w", chatd.ErrInvalid)
	}
	f.Chat, f.Body, f.Meta = *w.Chat, *w.Body, w.Meta
	return f, nil
}

// MaxAckIDs is the most ids one `ack` frame may carry (docs/protocol.md,
// "WebSocket details"). The server answers a larger frame `rejected
// too_large` and acks none of its ids; a client splits a larger batch.
const MaxAckIDs = 1000

func decodeAck(w *clientJSON) (ClientFrame, error) {
	if len(w.IDs) == 0 {
		return ClientFrame{}, fmt.Errorf("ack: ids is missing or empty: %w", chatd.ErrInvalid)
	}
	for _, id := range w.IDs {
		if !ValidMessageID(id) {
			return ClientFrame{}, fmt.Errorf("ack: id %.80q is not a message id: %w", id, chatd.ErrInvalid)
		}
	}
	return ClientFrame{Type: FrameAck, IDs: w.IDs}, nil
}

func decodeRead(w *clientJSON) (ClientFrame, error) {
	switch {
	case w.Chat == nil || !chatd.ValidChatID(*w.Chat):
		return ClientFrame{}, fmt.Errorf("read: chat must be 1-%d chars of [A-Za-z0-9_-]: %w", chatd.MaxChatIDLen, chatd.ErrInvalid)
	case w.Upto == nil || !ValidMessageID(*w.Upto):
		return ClientFrame{}, fmt.Errorf("read: upto is not a message id: %w", chatd.ErrInvalid)
	}
	return ClientFrame{Type: FrameRead, Chat: *w.Chat, Upto: *w.Upto}, nil
}

// ValidMessageID reports whether s may be a message id in a frame (ack ids,
// read's upto) or a REST cursor: the server refuses anything else before it
// reaches the store. Message ids are ULIDs; the check is the chat id rule
// (same charset, 64 chars), which every ULID passes, so ids minted another
// way later still round-trip.
func ValidMessageID(s string) bool { return chatd.ValidChatID(s) }

func echoCID(cid *string) string {
	if cid == nil || len(*cid) > maxEchoCID {
		return ""
	}
	return *cid
}

// AppendClientFrame appends the JSON of f to dst and returns the result; the
// client calls it for every frame it writes. It writes the fields of f.Type
// in the order the contract shows them (send: chat, cid, body; ack: ids;
// read: chat, upto), and only "type" for a ping or a type it does not know.
// It does not check the fields: the server is the judge of what is valid,
// and answers `rejected` with a reason.
func AppendClientFrame(dst []byte, f *ClientFrame) []byte {
	dst = append(dst, `{"type":`...)
	dst = appendString(dst, string(f.Type))
	switch f.Type {
	case FrameSend:
		dst = append(dst, `,"chat":`...)
		dst = appendString(dst, f.Chat)
		dst = append(dst, `,"cid":`...)
		dst = appendString(dst, f.CID)
		dst = append(dst, `,"body":`...)
		dst = appendString(dst, f.Body)
	case FrameAck:
		dst = append(dst, `,"ids":[`...)
		for i, id := range f.IDs {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendString(dst, id)
		}
		dst = append(dst, ']')
	case FrameRead:
		dst = append(dst, `,"chat":`...)
		dst = appendString(dst, f.Chat)
		dst = append(dst, `,"upto":`...)
		dst = appendString(dst, f.Upto)
	case FrameAuth:
		dst = appendAuth(dst, f)
	case FrameTyping:
		dst = appendTypingFields(dst, f)
	}
	dst = appendEventClientFields(dst, f)
	return append(dst, '}')
}

// SendRequest is the request a send, edit, delete or react frame makes of
// the server for user's device: the frame's fields, unchecked beyond what
// DecodeClientFrame checked (chatd.SendRequest.Check is the one check).
func (f *ClientFrame) SendRequest(user, device string) chatd.SendRequest {
	return chatd.SendRequest{Chat: f.Chat, From: user, Device: device, CID: f.CID, Body: f.Body,
		Kind: f.Type.EventKind(), Target: f.Target, Meta: f.Meta, Emoji: f.Emoji, On: f.On}
}
