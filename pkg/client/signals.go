package client

import (
	"context"
	"fmt"
	"time"

	"github.com/chatd/chatd/pkg/wire"
)

// Typing is a `typing` frame: User is typing in Chat.
type Typing struct {
	Chat string `json:"chat"`
	User string `json:"user"`
}

// Presence is a `presence` frame: User's first device came online or last
// device went offline anywhere in the cluster; LastSeen is set when offline.
type Presence struct {
	User     string    `json:"user"`
	Online   bool      `json:"online"`
	LastSeen time.Time `json:"last_seen"`
}

// Typing tells chat's other members that this user is typing. The server
// passes at most one per connection per chat per 3 s and drops the rest, so
// calling it on every keystroke is harmless but wasteful. Best effort:
// without a live connection it returns ErrNotConnected; a refusal (not a
// member, unknown chat) comes back only as a `rejected` frame in the log.
func (c *Client) Typing(ctx context.Context, chat string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s := c.session()
	if s == nil {
		return fmt.Errorf("typing: %w", ErrNotConnected)
	}
	if err := s.write(&wire.ClientFrame{Type: wire.FrameTyping, Chat: chat}); err != nil {
		return fmt.Errorf("typing: %w", err)
	}
	return nil
}

// onSignal hands a typing or presence frame out as an event.
func (s *session) onSignal(ctx context.Context, f *wire.ServerFrame) {
	switch f.Type {
	case wire.FrameTyping:
		s.c.emit(ctx, Event{Kind: EventTyping, Typing: Typing{Chat: f.Chat, User: f.User}})
	case wire.FramePresence:
		s.c.emit(ctx, Event{Kind: EventPresence, Presence: Presence{User: f.User, Online: f.Online, LastSeen: f.LastSeen}})
	}
}
