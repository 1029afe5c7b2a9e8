package wire

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/chatd/chatd"
)

// Events (docs/protocol.md "Events (v2)"): the client frames edit, delete
// and react, send's meta, and the event fields of the msg object. Kept
// apart from the v1 frames so each addition to the protocol is one file.

// EventKind is the stored kind a client event frame asks for.
func (t FrameType) EventKind() chatd.EventKind {
	switch t {
	case FrameEdit:
		return chatd.EventEdit
	case FrameDelete:
		return chatd.EventDelete
	case FrameReact:
		return chatd.EventReaction
	}
	return ""
}

func isEventFrame(t FrameType) bool { return t.EventKind() != "" }

// decodeEvent checks an edit, delete or react frame. The emoji's size and
// the target's existence are not checked here: ingest and the store decide
// those (too_large, not_found).
func decodeEvent(w *clientJSON) (ClientFrame, error) {
	t := FrameType(*w.Type)
	f := ClientFrame{Type: t, CID: echoCID(w.CID)}
	switch {
	case w.CID == nil || !chatd.ValidCID(*w.CID):
		return f, fmt.Errorf("%s: cid must be 1-%d chars of [A-Za-z0-9_-]: %w", t, chatd.MaxCIDLen, chatd.ErrInvalid)
	case w.Chat == nil || !chatd.ValidChatID(*w.Chat):
		return f, fmt.Errorf("%s: chat must be 1-%d chars of [A-Za-z0-9_-]: %w", t, chatd.MaxChatIDLen, chatd.ErrInvalid)
	case w.Target == nil || !ValidMessageID(*w.Target):
		return f, fmt.Errorf("%s: target is not a message id: %w", t, chatd.ErrInvalid)
	}
	f.Chat, f.Target = *w.Chat, *w.Target
	switch t {
	case FrameEdit:
		if w.Body == nil || *w.Body == "" {
			return f, fmt.Errorf("edit: body is missing or empty: %w", chatd.ErrInvalid)
		}
		f.Body = *w.Body
	case FrameReact:
		if w.Emoji == nil || w.On == nil {
			return f, fmt.Errorf("react: emoji and on are required: %w", chatd.ErrInvalid)
		}
		f.Emoji, f.On = *w.Emoji, *w.On
	}
	return f, nil
}

// appendEventClientFields appends send's meta and the fields of an edit,
// delete or react frame, in the order the contract shows them.
func appendEventClientFields(dst []byte, f *ClientFrame) []byte {
	if f.Type == FrameSend && len(f.Meta) > 0 {
		dst = append(dst, `,"meta":`...)
		return append(dst, f.Meta...)
	}
	if !isEventFrame(f.Type) {
		return dst
	}
	dst = append(dst, `,"chat":`...)
	dst = appendString(dst, f.Chat)
	dst = append(dst, `,"cid":`...)
	dst = appendString(dst, f.CID)
	dst = append(dst, `,"target":`...)
	dst = appendString(dst, f.Target)
	switch f.Type {
	case FrameEdit:
		dst = append(dst, `,"body":`...)
		dst = appendString(dst, f.Body)
	case FrameReact:
		dst = append(dst, `,"emoji":`...)
		dst = appendString(dst, f.Emoji)
		dst = append(dst, `,"on":`...)
		dst = strconv.AppendBool(dst, f.On)
	}
	return dst
}

// appendEventFields appends the v2 fields of m to a msg object: each only
// when set, so a plain message reads exactly as in v1. Meta is valid,
// compact JSON (chatd.CheckMeta) and goes out as stored.
func appendEventFields(dst []byte, m *chatd.Message) []byte {
	if m.Kind != "" {
		dst = append(dst, `,"kind":`...)
		dst = appendString(dst, string(m.Kind))
	}
	if m.Target != "" {
		dst = append(dst, `,"target":`...)
		dst = appendString(dst, m.Target)
	}
	if len(m.Meta) > 0 {
		dst = append(dst, `,"meta":`...)
		dst = append(dst, m.Meta...)
	}
	if m.Emoji != "" {
		dst = append(dst, `,"emoji":`...)
		dst = appendString(dst, m.Emoji)
	}
	if m.On != nil {
		dst = append(dst, `,"on":`...)
		dst = strconv.AppendBool(dst, *m.On)
	}
	if m.EditedAt != nil {
		dst = append(dst, `,"edited_at":`...)
		dst = appendTime(dst, *m.EditedAt)
	}
	if m.Deleted {
		dst = append(dst, `,"deleted":true`...)
	}
	if len(m.Reactions) > 0 {
		dst = appendReactions(dst, m.Reactions)
	}
	return dst
}

// appendReactions writes the reactions map with its keys sorted, so equal
// states encode equally.
func appendReactions(dst []byte, rx map[string][]string) []byte {
	keys := make([]string, 0, len(rx))
	for k := range rx {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	dst = append(dst, `,"reactions":{`...)
	for i, k := range keys {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendString(dst, k)
		dst = append(dst, ":["...)
		for j, u := range rx[k] {
			if j > 0 {
				dst = append(dst, ',')
			}
			dst = appendString(dst, u)
		}
		dst = append(dst, ']')
	}
	return append(dst, '}')
}

// setEventFields copies the msg frame's v2 fields into m.
func (f *ServerFrame) setEventFields(m *chatd.Message) {
	m.Kind, m.Target, m.Meta, m.Emoji, m.On = f.Kind, f.Target, f.Meta, f.Emoji, f.On
	m.EditedAt, m.Deleted, m.Reactions = f.EditedAt, f.Deleted, f.Reactions
}
