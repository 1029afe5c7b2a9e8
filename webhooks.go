package chatd

import (
	"encoding/json"
	"time"
)

// WebhookFailure is an event a webhook endpoint did not accept within its
// delivery attempts, set aside in PostgreSQL so that its consumer could move
// on (docs/integrations.md, "Dead letters"). Body is the exact payload that
// was signed, so a replay sends the same bytes under the same WebhookID.
type WebhookFailure struct {
	ID int64 `json:"id"`
	// Endpoint is the endpoint's consumer name (hook-…); URL is where it posts.
	Endpoint  string          `json:"endpoint"`
	URL       string          `json:"url"`
	WebhookID string          `json:"webhook_id"`
	Chat      string          `json:"chat_id"`
	Seq       int64           `json:"seq"`
	MessageID string          `json:"message_id"`
	Kind      EventKind       `json:"kind"`
	Body      json.RawMessage `json:"payload"`
	Attempts  int             `json:"attempts"`
	LastError string          `json:"last_error"`
	FailedAt  time.Time       `json:"failed_at"`
}

// WebhookReplay is what one replay of many dead letters did
// (docs/integrations.md, "Dead letters and replay").
type WebhookReplay struct {
	// Replayed counts the dead letters their endpoints took (they left the
	// dead letters).
	Replayed int `json:"replayed"`
	// Left counts the dead letters still set aside afterwards, of the
	// endpoint replayed or of all.
	Left int64 `json:"left"`
	// Stopped names, per endpoint that refused one, the dead letter it
	// refused: that endpoint's later ones were not tried, so that it still
	// gets them in order.
	Stopped []WebhookReplayStop `json:"stopped"`
}

// WebhookReplayStop is the dead letter at which a replay stopped for its
// endpoint, and why.
type WebhookReplayStop struct {
	Endpoint string `json:"endpoint"`
	ID       int64  `json:"id"`
	Error    string `json:"error"`
}
