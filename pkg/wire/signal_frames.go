package wire

import (
	"fmt"
	"time"

	"github.com/chatd/chatd"
)

// Signal frames (v2): typing both ways, presence server → client. The
// receipt frame is older and lives with the other server frames.

func decodeTyping(w *clientJSON) (ClientFrame, error) {
	if w.Chat == nil || !chatd.ValidChatID(*w.Chat) {
		return ClientFrame{}, fmt.Errorf("typing: chat must be 1-%d chars of [A-Za-z0-9_-]: %w", chatd.MaxChatIDLen, chatd.ErrInvalid)
	}
	return ClientFrame{Type: FrameTyping, Chat: *w.Chat}, nil
}

func appendTypingFields(dst []byte, f *ClientFrame) []byte {
	dst = append(dst, `,"chat":`...)
	return appendString(dst, f.Chat)
}

// AppendTyping appends the server's `typing` frame: user is typing in chat.
func AppendTyping(dst []byte, chat, user string) []byte {
	dst = append(dst, `{"type":"typing","chat":`...)
	dst = appendString(dst, chat)
	dst = append(dst, `,"user":`...)
	dst = appendString(dst, user)
	return append(dst, '}')
}

// AppendPresence appends a `presence` frame. last_seen is written only when
// the user is offline (and known), as the contract has it.
func AppendPresence(dst []byte, user string, online bool, lastSeen time.Time) []byte {
	dst = append(dst, `{"type":"presence","user":`...)
	dst = appendString(dst, user)
	if online {
		return append(dst, `,"online":true}`...)
	}
	dst = append(dst, `,"online":false`...)
	if !lastSeen.IsZero() {
		dst = append(dst, `,"last_seen":`...)
		dst = appendTime(dst, lastSeen.UTC())
	}
	return append(dst, '}')
}
