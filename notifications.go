package chatd

import "time"

// EventNotify is the kind of an offline notification on a webhook: not an
// event of a chat's seq log, but a word about some of them to a member who
// did not get them live (docs/integrations.md, "Offline notifications").
const EventNotify EventKind = "notify"

// Notification tells an app server that User did not get Count messages of
// Chat live, so it can send a mobile or web push with its own credentials.
// It names the newest of them. Sender and Text are there as far as the
// server's preview setting allows.
type Notification struct {
	// ID is stable for the same messages: the webhook-id, for deduplication.
	ID        string `json:"id"`
	User      string `json:"user"`
	Chat      string `json:"chat_id"`
	MessageID string `json:"message_id"`
	Seq       int64  `json:"seq"`
	Sender    string `json:"sender,omitempty"`
	Text      string `json:"text,omitempty"`
	// Count is how many messages of the chat this notification stands for:
	// those the user had not got or read when it was decided.
	Count int `json:"count"`
	// Unread is the user's unread count in the chat, UnreadTotal over all
	// their chats (an app icon's badge), as GET /api/chats counts them.
	Unread      int64 `json:"unread"`
	UnreadTotal int64 `json:"unread_total"`
	// TS is when the newest message was accepted.
	TS time.Time `json:"ts"`
}
