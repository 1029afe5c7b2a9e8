package webhook

import (
	"encoding/json"
	"strconv"
	"time"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/internal/jsonfast"
	"github.com/chatd/chatd/pkg/codec"
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

// Encode returns the payload's JSON, byte for byte what json.Marshal(p)
// gives, without reflection: every endpoint encodes every event it sends.
func (p *Payload) Encode() ([]byte, error) {
	if y := p.Timestamp.Year(); y < 0 || y > 9999 {
		return json.Marshal(p) // its error names the time
	}
	d := &p.Data
	dst := make([]byte, 0, 256+len(d.Event.Body)+len(d.Event.Meta)+24*len(d.Recipients))
	dst = append(dst, `{"type":`...)
	dst = jsonfast.AppendString(dst, p.Type, true)
	dst = append(dst, `,"timestamp":`...)
	dst = jsonfast.AppendTime(dst, p.Timestamp)
	dst = append(dst, `,"data":{"kind":`...)
	dst = jsonfast.AppendString(dst, string(d.Kind), true)
	dst = append(dst, `,"chat_id":`...)
	dst = jsonfast.AppendString(dst, d.ChatID, true)
	dst = append(dst, `,"seq":`...)
	dst = strconv.AppendInt(dst, d.Seq, 10)
	dst = append(dst, `,"recipients":`...)
	dst = jsonfast.AppendStrings(dst, d.Recipients, true)
	dst = append(dst, `,"event":`...)
	dst, err := codec.AppendMessageJSON(dst, &d.Event)
	if err != nil {
		return nil, err
	}
	return append(dst, "}}"...), nil
}
