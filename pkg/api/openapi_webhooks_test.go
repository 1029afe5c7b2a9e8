package api_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/pkg/webhook"
)

// The webhook payloads chatd builds match the schemas the OpenAPI document
// gives them (webhooks.chatEvent, chatNotify, chatChange).
func TestWebhookPayloadsMatchTheDocument(t *testing.T) {
	doc, err := openapi3Doc()
	if err != nil {
		t.Fatal(err)
	}
	ts := time.Date(2026, 12, 3, 12, 0, 0, 123456000, time.UTC)
	on := true
	cases := []struct {
		name, schema string
		payload      any
	}{
		{"a message", "WebhookPayload", webhook.NewPayload(&chatd.Envelope{Recipients: []string{"alice", "bob"},
			Message: chatd.Message{ID: "01JE5Q7A1B2C3D4E5F6G7H8J9K", CID: "c-7", Chat: "c1", From: "alice", Body: "hi", Seq: 42, TS: ts}})},
		{"a reaction", "WebhookPayload", webhook.NewPayload(&chatd.Envelope{Recipients: []string{"alice"},
			Message: chatd.Message{ID: "01JE5Q7A1B2C3D4E5F6G7H8J9M", CID: "c-8", Chat: "c1", From: "alice", Seq: 43, TS: ts,
				Kind: chatd.EventReaction, Target: "01JE5Q7A1B2C3D4E5F6G7H8J9K", Emoji: "👍", On: &on}})},
		{"a notification", "NotifyPayload", webhook.NotifyPayload{Type: "chat.notify", Timestamp: ts, Data: chatd.Notification{
			ID: "ntf_1", User: "bob", Chat: "c1", MessageID: "01JE5Q7A1B2C3D4E5F6G7H8J9K", Seq: 42, Sender: "alice", Count: 1, Unread: 1, UnreadTotal: 2, TS: ts}}},
		{"a chat created", "ChangePayload", webhook.ChangePayload{Type: "chat.member", Timestamp: ts, Data: chatd.ChatChange{
			ID: 1, Kind: chatd.EventMember, Chat: "c1", Change: chatd.ChangeCreated, Users: []string{"alice", "bob"}, By: "alice", TS: ts}}},
		{"a member removed by the admin API", "ChangePayload", webhook.ChangePayload{Type: "chat.member", Timestamp: ts, Data: chatd.ChatChange{
			ID: 2, Kind: chatd.EventMember, Chat: "c1", Change: chatd.ChangeRemoved, Users: []string{"bob"}, TS: ts}}},
		{"a read", "ChangePayload", webhook.ChangePayload{Type: "chat.read", Timestamp: ts, Data: chatd.ChatChange{
			ID: 3, Kind: chatd.EventRead, Chat: "c1", Users: []string{"bob"}, Seq: 42, Upto: "01JE5Q7A1B2C3D4E5F6G7H8J9K", TS: ts}}},
	}
	for _, c := range cases {
		ref := doc.Components.Schemas[c.schema]
		if ref == nil || ref.Value == nil {
			t.Fatalf("openapi.yaml has no %s schema", c.schema)
		}
		raw, err := json.Marshal(c.payload)
		if err != nil {
			t.Fatal(err)
		}
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			t.Fatal(err)
		}
		if err := ref.Value.VisitJSON(v); err != nil {
			t.Errorf("%s: %s does not match the %s schema: %v", c.name, raw, c.schema, err)
		}
	}
}
