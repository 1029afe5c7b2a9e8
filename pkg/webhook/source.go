package webhook

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/pkg/codec"
)

// source is a stream an endpoint consumes: the delivery stream's events,
// or the notifications pkg/notify publishes.
type source struct {
	stream string
	// suffix ends the endpoint's consumer name for this source.
	suffix string
	decode func(h *hook, data []byte) (it item, wanted bool, err error)
}

func eventSource(stream string) source {
	return source{stream: stream, decode: decodeEvent}
}

// NotifySuffix ends the name of an endpoint's consumer of notifications.
const NotifySuffix = "-notify"

func notifySource(stream string) source {
	return source{stream: stream, suffix: NotifySuffix, decode: decodeNotification}
}

// decodeEvent reads a delivery-stream envelope.
func decodeEvent(h *hook, data []byte) (item, bool, error) {
	e, err := codec.DecodeEnvelope(data)
	if err != nil {
		return item{}, false, err
	}
	if !h.wants(e.Message.Kind.Normal(), e.Message.Chat) {
		return item{}, false, nil
	}
	p := NewPayload(&e)
	body, err := p.Encode()
	if err != nil {
		return item{}, false, fmt.Errorf("encode the payload: %w", err)
	}
	return item{id: WebhookID(e.Message.ID, h.name), chat: e.Message.Chat, eventSeq: e.Message.Seq,
		messageID: e.Message.ID, kind: e.Message.Kind.Normal(), body: body}, true, nil
}

// NotifyPayload is the body of a notification's request: the payload's
// shape with the notification as its data (docs/integrations.md, "Offline
// notifications").
type NotifyPayload struct {
	// Type is "chat.notify".
	Type string `json:"type"`
	// Timestamp is when the newest message it names was accepted.
	Timestamp time.Time          `json:"timestamp"`
	Data      chatd.Notification `json:"data"`
}

// decodeNotification reads a notification; its id is the webhook-id.
func decodeNotification(h *hook, data []byte) (item, bool, error) {
	var n chatd.Notification
	if err := json.Unmarshal(data, &n); err != nil {
		return item{}, false, err
	}
	if n.ID == "" || n.Chat == "" {
		return item{}, false, fmt.Errorf("a notification without id or chat")
	}
	if !h.wants(chatd.EventNotify, n.Chat) {
		return item{}, false, nil
	}
	body, err := json.Marshal(NotifyPayload{Type: TypePrefix + string(chatd.EventNotify), Timestamp: n.TS, Data: n})
	if err != nil {
		return item{}, false, fmt.Errorf("encode the payload: %w", err)
	}
	return item{id: n.ID, chat: n.Chat, eventSeq: n.Seq, messageID: n.MessageID, kind: chatd.EventNotify, body: body}, true, nil
}

// ChangesSuffix ends the name of an endpoint's consumer of chat changes.
const ChangesSuffix = "-changes"

func changeSource(stream string) source {
	return source{stream: stream, suffix: ChangesSuffix, decode: decodeChange}
}

// ChangePayload is the body of a member change's or read position's
// request: the payload's shape with the change as its data
// (docs/integrations.md, "Member changes and read receipts").
type ChangePayload struct {
	// Type is "chat.member" or "chat.read".
	Type string `json:"type"`
	// Timestamp is when the change committed.
	Timestamp time.Time        `json:"timestamp"`
	Data      chatd.ChatChange `json:"data"`
}

// decodeChange reads a chat change; its webhook-id is its key and the
// endpoint's, like an event's.
func decodeChange(h *hook, data []byte) (item, bool, error) {
	var c chatd.ChatChange
	if err := json.Unmarshal(data, &c); err != nil {
		return item{}, false, err
	}
	if c.ID == 0 || c.Chat == "" || !slices.Contains(changeKinds, c.Kind) {
		return item{}, false, fmt.Errorf("a chat change without id, chat or a known kind")
	}
	if !h.wants(c.Kind, c.Chat) {
		return item{}, false, nil
	}
	body, err := json.Marshal(ChangePayload{Type: TypePrefix + string(c.Kind), Timestamp: c.TS, Data: c})
	if err != nil {
		return item{}, false, fmt.Errorf("encode the payload: %w", err)
	}
	endpoint := strings.TrimPrefix(ConsumerName(h.ep.URL), ConsumerPrefix)
	return item{id: c.Key() + "_" + endpoint, chat: c.Chat, eventSeq: c.Seq,
		messageID: c.Upto, kind: c.Kind, body: body}, true, nil
}
