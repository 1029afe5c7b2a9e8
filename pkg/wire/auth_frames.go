package wire

import (
	"fmt"
	"strconv"

	"github.com/chatd/chatd"
)

// Token refresh on an open WebSocket (docs/protocol.md "Token lifetime on an
// open WebSocket"): the client sends `{"type":"auth","token":"T2"}` before its
// token's exp, the server answers `{"type":"authed","exp":N}`.

// decodeAuth decodes an `auth` frame. Only a missing or non-string token is
// invalid here; an empty or bad token is the server's to judge (it closes
// with 4401), because a refresh that does not authenticate ends the session.
func decodeAuth(w *clientJSON) (ClientFrame, error) {
	if w.Token == nil {
		return ClientFrame{}, fmt.Errorf("auth: token is missing: %w", chatd.ErrInvalid)
	}
	return ClientFrame{Type: FrameAuth, Token: *w.Token}, nil
}

// appendAuth appends the fields of an `auth` frame after its type.
func appendAuth(dst []byte, f *ClientFrame) []byte {
	dst = append(dst, `,"token":`...)
	return appendString(dst, f.Token)
}

// AppendAuthed appends the `authed` frame answering a refresh: exp is the
// new token's expiry in Unix seconds, the time the server will now close at.
func AppendAuthed(dst []byte, exp int64) []byte {
	dst = append(dst, `{"type":"authed","exp":`...)
	dst = strconv.AppendInt(dst, exp, 10)
	return append(dst, '}')
}
