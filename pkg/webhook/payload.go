package webhook

import (
	"encoding/json"
	"time"

	"github.com/chatd/chatd"
)

// Payload is the JSON body of every webhook request
// (docs/integrations.md, "Payload"). Its shape is the one the Standard
// Webhooks specification recommends: a type, a timestamp, and the data.
type Payload struct {
	// Type is "chat." and the event kind: chat.message, chat.edit,
	// chat.delete, chat.reaction.
	Type string `json:"type"`
	// Timestamp is when the event was accepted (the event's ts).
	Timestamp time.Time `json:"timestamp"`
	Data      Data      `json:"data"`
}

// Data is the event and where it belongs.
type Data struct {
	Kind   chatd.EventKind `json:"kind"`
	ChatID string          `json:"chat_id"`
	Seq    int64           `json:"seq"`
	// Recipients are the chat's members when the event was accepted,
	// the sender included.
	Recipients []string `json:"recipients"`
	// Event is the event as GET /api/chats/{id}/messages answers it at
	// acceptance (without the later state fields edited_at, deleted and
	// reactions, which history adds).
	Event chatd.Message `json:"event"`
}

// TypePrefix starts every payload type; a later kind (notify) gets its own.
const TypePrefix = "chat."

// NewPayload is the payload of the stream envelope e.
func NewPayload(e *chatd.Envelope) Payload {
	kind := e.Message.Kind.Normal()
	to := e.Recipients
	if to == nil {
		to = []string{}
	}
	return Payload{
		Type:      TypePrefix + string(kind),
		Timestamp: e.Message.TS,
		Data:      Data{Kind: kind, ChatID: e.Message.Chat, Seq: e.Message.Seq, Recipients: to, Event: e.Message},
	}
}

// Encode returns the payload's JSON.
func (p *Payload) Encode() ([]byte, error) { return json.Marshal(p) }
