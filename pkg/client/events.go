package client

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/pkg/wire"
	"github.com/oklog/ulid/v2"
)

// Events of v2 (docs/protocol.md "Events"): edits, deletes and reactions
// are sent like messages (same credits, same resend of an unanswered frame
// with its cid) and come back to the app as Event{Kind: EventMessage} whose
// Message.Kind names the event; history reads also carry each message's
// current state (EditedAt, Deleted, Reactions).

// SendMeta is SendCID with meta, a JSON object of at most 2048 bytes stored
// and returned verbatim. An empty cid gets a fresh one.
func (c *Client) SendMeta(ctx context.Context, chat, cid, body string, meta json.RawMessage) (Accepted, error) {
	return c.submit(ctx, wire.ClientFrame{Type: wire.FrameSend, Chat: chat, CID: freshCID(cid), Body: body, Meta: meta})
}

// Edit replaces the body of target, a message this user sent to chat. An
// empty cid gets a fresh one; pass the same cid again to learn the outcome
// of an edit whose answer was lost. Errors are SendCID's; a *RejectedError
// with CodeForbidden (not the author), CodeNotFound (no such message in
// chat) or CodeInvalid (deleted, or not a message) is final.
func (c *Client) Edit(ctx context.Context, chat, cid, target, body string) (Accepted, error) {
	return c.submit(ctx, wire.ClientFrame{Type: wire.FrameEdit, Chat: chat, CID: freshCID(cid), Target: target, Body: body})
}

// Delete deletes target, a message this user sent to chat; the server
// erases its text. cid and errors as for Edit.
func (c *Client) Delete(ctx context.Context, chat, cid, target string) (Accepted, error) {
	return c.submit(ctx, wire.ClientFrame{Type: wire.FrameDelete, Chat: chat, CID: freshCID(cid), Target: target})
}

// React adds (on) or removes this user's emoji on target, a message of
// chat. cid and errors as for Edit.
func (c *Client) React(ctx context.Context, chat, cid, target, emoji string, on bool) (Accepted, error) {
	if emoji == "" {
		return Accepted{}, fmt.Errorf("react: emoji is required: %w", chatd.ErrInvalid)
	}
	return c.submit(ctx, wire.ClientFrame{Type: wire.FrameReact, Chat: chat, CID: freshCID(cid), Target: target, Emoji: emoji, On: on})
}

func freshCID(cid string) string {
	if cid == "" {
		return ulid.Make().String()
	}
	return cid
}

// setEventFields gives the client's own event, known from its accepted
// frame, the fields a member's msg frame of it carries.
func (p *pending) setEventFields(m *chatd.Message) {
	f := &p.frame
	m.Kind, m.Target = f.Type.EventKind(), f.Target
	switch f.Type {
	case wire.FrameSend:
		if meta, err := chatd.CheckMeta(f.Meta); err == nil {
			m.Meta = meta
		}
	case wire.FrameReact:
		on := f.On
		m.Emoji, m.On = f.Emoji, &on
	}
}
