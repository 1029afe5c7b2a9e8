package wire

import (
	"fmt"
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
