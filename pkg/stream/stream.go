// Package stream owns the JetStream side of the outbox: the CHAT_OUTBOX
// stream's configuration and the relay that moves committed outbox rows from
// PostgreSQL into it, in order, exactly one relay per database.
package stream

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Defaults of the delivery stream.
const (
	DefaultName       = "CHAT_OUTBOX"
	SubjectPrefix     = "chat.out."
	DefaultMaxAge     = 26 * time.Hour
	DefaultDuplicates = 30 * time.Second
	DefaultMaxBytes   = 1 << 30
	DefaultReplicas   = 1
)

// Config describes the delivery stream. Zero values take the defaults.
type Config struct {
	// Name is the stream name. Empty means DefaultName.
	Name string
	// SubjectPrefix is what every subject of the stream starts with (ending
	// in a dot): a message of chat C is published to SubjectPrefix+C. Two
	// deployments sharing a NATS account need different ones (and names).
	// Empty means SubjectPrefix, the package constant.
	SubjectPrefix string
	// Replicas is 1 for the embedded server, 3 on a cluster. Zero means
	// DefaultReplicas.
	Replicas int
	// MaxAge is a disk backstop only: reclaim purges far earlier. Zero means
	// DefaultMaxAge.
	MaxAge time.Duration
	// Duplicates is the Nats-Msg-Id window that drops a relay's republish
	// after a crash between publish and delete. Zero means DefaultDuplicates.
	//
	// The server keeps every id it stored in memory for the whole window, so
	// chatd's RSS grows with the window times the rate: JetStream's 2-minute
	// default held four times the ids of 30 s (docs/benchmarks-log.md, "The
	// duplicate window held every message id for two minutes (fixed)"). A
	// relay republishes within seconds: its retries are 20-250 ms apart and a
	// stand-by relay takes the lock within 2 s of a crash. A copy that comes
	// after the window is not lost work: push acks a second copy of a message
	// it still tracks without a frame, and a client dedupes by message id in
	// any case.
	Duplicates time.Duration
	// MaxBytes bounds the stream on disk. Publishing beyond it fails
	// (DiscardNew), so the relay stops and the PostgreSQL outbox grows
	// instead: back-pressure, never silent loss. Zero means DefaultMaxBytes.
	MaxBytes int64
}

func (c *Config) setDefaults() {
	if c.Name == "" {
		c.Name = DefaultName
	}
	if c.SubjectPrefix == "" {
		c.SubjectPrefix = SubjectPrefix
	}
	if c.Replicas <= 0 {
		c.Replicas = DefaultReplicas
	}
	if c.MaxAge <= 0 {
		c.MaxAge = DefaultMaxAge
	}
	if c.Duplicates <= 0 {
		c.Duplicates = DefaultDuplicates
	}
	if c.MaxBytes <= 0 {
		c.MaxBytes = DefaultMaxBytes
	}
}

// Ensure creates the delivery stream or updates it to cfg, and returns it.
func Ensure(ctx context.Context, js jetstream.JetStream, cfg Config) (jetstream.Stream, error) {
	cfg.setDefaults()
	sc := jetstream.StreamConfig{
		Name:        cfg.Name,
		Description: "chatd delivery buffer: accepted messages on their way to connected recipients",
		Subjects:    []string{cfg.SubjectPrefix + ">"},
		Storage:     jetstream.FileStorage,
		Retention:   jetstream.LimitsPolicy,
		Discard:     jetstream.DiscardNew,
		MaxAge:      cfg.MaxAge,
		MaxBytes:    cfg.MaxBytes,
		Duplicates:  cfg.Duplicates,
		Replicas:    cfg.Replicas,
	}
	s, err := js.CreateStream(ctx, sc)
	if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
		if err := sameSubjects(ctx, js, sc); err != nil {
			return nil, err
		}
		s, err = js.UpdateStream(ctx, sc)
	}
	if err != nil {
		return nil, fmt.Errorf("ensure stream %s: %w", cfg.Name, err)
	}
	return s, nil
}

// sameSubjects refuses to take over a stream of the same name that listens
// on other subjects: it belongs to another deployment on this NATS account
// (or this one changed its subject prefix), and updating it would steal its
// messages' subjects.
func sameSubjects(ctx context.Context, js jetstream.JetStream, want jetstream.StreamConfig) error {
	s, err := js.Stream(ctx, want.Name)
	if err != nil {
		return fmt.Errorf("ensure stream %s: %w", want.Name, err)
	}
	have := s.CachedInfo().Config.Subjects
	if !slices.Equal(have, want.Subjects) {
		return fmt.Errorf("ensure stream %s: it exists with subjects %v, not %v: another deployment uses this name (pick another stream name) or the subject prefix changed", want.Name, have, want.Subjects)
	}
	return nil
}
