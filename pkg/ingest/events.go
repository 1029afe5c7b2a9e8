package ingest

import (
	"fmt"

	"github.com/chatd/chatd"
)

// validateEvent checks what each kind carries (docs/protocol.md "Events
// (v2)"), the body of a message and an edit included, and replaces r.Meta
// with its compact form. Rules that need the stored target (author, chat,
// deleted) are the store's, decided in the committing transaction.
func (in *Ingest) validateEvent(r *Request) error {
	kind := r.Kind.Normal()
	if kind != chatd.EventMessage {
		if len(r.Meta) > 0 {
			return fmt.Errorf("meta is carried by messages only, not by a %s: %w", kind, chatd.ErrInvalid)
		}
		if !chatd.ValidChatID(r.Target) {
			return fmt.Errorf("%s: target %.80q is not a message id: %w", kind, r.Target, chatd.ErrInvalid)
		}
	}
	switch kind {
	case chatd.EventMessage:
		meta, err := chatd.CheckMeta(r.Meta)
		if err != nil {
			return err
		}
		r.Kind, r.Target, r.Meta, r.Emoji, r.On = "", "", meta, "", false
		return chatd.CheckBody(r.Body, in.cfg.MaxBodyBytes)
	case chatd.EventEdit:
		r.Emoji, r.On = "", false
		return chatd.CheckBody(r.Body, in.cfg.MaxBodyBytes)
	case chatd.EventDelete:
		r.Body, r.Emoji, r.On = "", "", false
		return nil
	case chatd.EventReaction:
		r.Body = ""
		return chatd.CheckEmoji(r.Emoji)
	}
	return fmt.Errorf("unknown event kind %.32q: %w", r.Kind, chatd.ErrInvalid)
}
