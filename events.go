package chatd

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// EventKind is the kind of an event in a chat's seq log. The empty kind is
// a message: stored rows and wire frames omit it for messages, so v1
// clients and rows read exactly as before.
type EventKind string

// Event kinds (docs/protocol.md "Events (v2)").
const (
	EventMessage  EventKind = "message"
	EventEdit     EventKind = "edit"
	EventDelete   EventKind = "delete"
	EventReaction EventKind = "reaction"
)

// Event limits of the contract.
const (
	// MaxMetaBytes bounds meta as the client encoded it.
	MaxMetaBytes = 2048
	// MaxEmojiBytes bounds a reaction's emoji.
	MaxEmojiBytes = 32
)

// Normal returns k with the empty kind read as EventMessage.
func (k EventKind) Normal() EventKind {
	if k == "" {
		return EventMessage
	}
	return k
}

// CheckMeta checks meta as the client encoded it and returns it compacted
// (whitespace dropped, values and number texts untouched) or nil when it is
// absent (empty or JSON null). It must be a JSON object of at most
// MaxMetaBytes bytes whose text CheckText takes, with no \u0000 or
// lone-surrogate escape: ErrTooLarge over the limit, ErrInvalid otherwise. Compacting
// makes the stored form equal to what encoding/json writes for it, so the
// envelope's size can be computed without encoding it.
func CheckMeta(meta []byte) (json.RawMessage, error) {
	t := bytes.TrimSpace(meta)
	if len(t) == 0 || string(t) == "null" {
		return nil, nil
	}
	if len(meta) > MaxMetaBytes {
		return nil, fmt.Errorf("meta is %d bytes, the limit is %d: %w", len(meta), MaxMetaBytes, ErrTooLarge)
	}
	if err := CheckText("meta", string(t)); err != nil {
		return nil, err
	}
	if t[0] != '{' || !json.Valid(t) {
		return nil, fmt.Errorf("meta must be a JSON object: %w", ErrInvalid)
	}
	if err := checkJSONText("meta", t); err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := json.Compact(&b, t); err != nil {
		return nil, fmt.Errorf("meta: %v: %w", err, ErrInvalid)
	}
	return b.Bytes(), nil
}

// CheckEmoji returns nil for an emoji of 1..MaxEmojiBytes bytes of text
// CheckText takes, ErrTooLarge when longer and ErrInvalid otherwise.
func CheckEmoji(emoji string) error {
	switch {
	case emoji == "":
		return fmt.Errorf("emoji is empty: %w", ErrInvalid)
	case len(emoji) > MaxEmojiBytes:
		return fmt.Errorf("emoji is %d bytes, the limit is %d: %w", len(emoji), MaxEmojiBytes, ErrTooLarge)
	}
	return CheckText("emoji", emoji)
}
