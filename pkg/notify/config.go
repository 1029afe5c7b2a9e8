// Package notify tells webhook endpoints about members who did not get a
// message live (docs/integrations.md, "Offline notifications"). Every node
// records how far its sessions acked each chat (Recorder); one node at a
// time (a PostgreSQL advisory lock elects it) reads the delivery stream
// through its own durable consumer, gathers each member's messages for a
// window, and publishes a chatd.Notification for those still neither
// delivered nor read when the window ends (Notifier). Notifications go to
// a stream of their own, which each subscribing endpoint consumes like the
// delivery stream, with the same retries and dead letters.
package notify

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/chatd/chatd/internal/elect"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
)

// Previews: how much of a message a notification carries.
const (
	PreviewNone   = "none"   // neither sender nor text
	PreviewSender = "sender" // the sender, not the text
	PreviewText   = "text"   // the sender and the start of the text
)

// Defaults of Config.
const (
	DefaultAfter   = 3 * time.Second
	DefaultPreview = PreviewSender
	// DefaultFlushEvery: a member acking many messages a second costs a
	// row update per flush, not per message.
	DefaultFlushEvery = 500 * time.Millisecond
	// ConsumerName is the notifier's durable consumer of the delivery
	// stream. It starts like a webhook's (hook-), so reclaim keeps events
	// in the stream until the notifier has decided on them.
	ConsumerName = "hook-notify"
	// PreviewRunes bounds a text preview (push services take about 4 KiB
	// in all).
	PreviewRunes = 140
)

// Lock is a held election of the node that notifies.
type Lock = elect.Lock

// Store is what notifications need of PostgreSQL.
type Store interface {
	TryLock(ctx context.Context, name string) (Lock, bool, error)
	// RecordDelivered moves delivery positions forward.
	RecordDelivered(ctx context.Context, users, chats []string, seqs []int64) error
	// Reached is, per (users[i], chats[i]), the highest seq delivered to or
	// read by the user.
	Reached(ctx context.Context, users, chats []string) ([]int64, error)
	// Unread is each user's unread count per chat, for chats with any.
	Unread(ctx context.Context, users []string) (map[string]map[string]int64, error)
}

// Config configures a Notifier. Zero values take the defaults.
type Config struct {
	// After is the window: a member who has neither acked nor read a
	// message this long after it was accepted is notified, once for all the
	// chat's messages accepted within the window. Zero means DefaultAfter.
	After time.Duration
	// Preview is PreviewNone, PreviewSender or PreviewText; empty means
	// DefaultPreview.
	Preview string
	// JS is the JetStream context; Stream the delivery stream's name.
	// Required.
	JS     jetstream.JetStream
	Stream string
	// Filter, if set, is the one subject filter of the notifier's consumer
	// of the delivery stream (the node sets <prefix>.out.*): the messages
	// every recipient took live, which the relay publishes under another
	// prefix, never come to it. Nobody is behind on those, so no window
	// they would have opened could end in a notification. Empty: every
	// subject.
	Filter string
	// Out is the notification stream's name and SubjectPrefix its
	// subjects' start (a notification of chat C goes to SubjectPrefix+C);
	// Replicas its replica count. Required, but for Replicas (zero: 1).
	Out           string
	SubjectPrefix string
	Replicas      int
	// Store records positions and elects the notifier. Required.
	Store Store
	// FlushEvery is how often the recorder writes positions; a window is
	// decided this long (and a margin) after it ended. Zero means
	// DefaultFlushEvery.
	FlushEvery time.Duration
	// Standby is how often a node that does not notify tries to take over.
	// Zero means 2 s.
	Standby time.Duration
	// AckWait is the consumer's ack wait: how long the messages a notifier
	// that died was holding wait before the next one gets them. Zero means
	// 30 s, or three windows if longer.
	AckWait time.Duration
	// Now is the clock windows end by. Nil means time.Now.
	Now        func() time.Time
	Logger     *slog.Logger
	Registerer prometheus.Registerer
}

func (c *Config) setDefaults() error {
	if c.JS == nil || c.Stream == "" || c.Out == "" || c.SubjectPrefix == "" || c.Store == nil {
		return errors.New("notify: Config.JS, Stream, Out, SubjectPrefix and Store are required")
	}
	if c.After <= 0 {
		c.After = DefaultAfter
	}
	if c.Preview == "" {
		c.Preview = DefaultPreview
	}
	if err := CheckPreview(c.Preview); err != nil {
		return err
	}
	if c.Replicas <= 0 {
		c.Replicas = 1
	}
	if c.FlushEvery <= 0 {
		c.FlushEvery = DefaultFlushEvery
	}
	if c.Standby <= 0 {
		c.Standby = 2 * time.Second
	}
	if c.AckWait <= 0 {
		c.AckWait = max(30*time.Second, 3*c.After)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return nil
}

// CheckPreview reports whether p is a preview setting.
func CheckPreview(p string) error {
	switch p {
	case PreviewNone, PreviewSender, PreviewText:
		return nil
	}
	return fmt.Errorf("notify preview %q: use %s, %s or %s", p, PreviewNone, PreviewSender, PreviewText)
}
