// Package webhook delivers the delivery stream's events to HTTP endpoints,
// signed as the Standard Webhooks specification says. Each endpoint is its
// own durable JetStream consumer of the stream (hook-<hash of its URL>), so a
// slow or dead endpoint holds back only itself; in a cluster one node per
// endpoint delivers (a PostgreSQL advisory lock elects it) and the others
// stand by. Delivery is at least once, in per-chat seq order per endpoint;
// what an endpoint does not accept within its attempts is set aside in
// PostgreSQL and can be replayed (docs/integrations.md).
package webhook

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/internal/elect"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
)

// ConsumerPrefix starts every endpoint's durable consumer name; reclaim
// counts consumers named so toward the purge floor.
const ConsumerPrefix = "hook-"

// Defaults of Config.
const (
	DefaultMaxAttempts = 10
	DefaultTimeout     = 10 * time.Second
	DefaultMinBackoff  = time.Second
	DefaultMaxBackoff  = time.Minute
	DefaultWorkers     = 8
	DefaultAckWait     = 10 * time.Second
)

// Kinds an endpoint can subscribe to: the event kinds the delivery stream
// carries, offline notifications, and the chat changes (members, reads)
// pkg/changes publishes (docs/integrations.md, "What is delivered").
var Kinds = slices.Concat(streamKinds, []chatd.EventKind{chatd.EventNotify}, changeKinds)

// streamKinds are the kinds the delivery stream carries.
var streamKinds = []chatd.EventKind{chatd.EventMessage, chatd.EventEdit, chatd.EventDelete, chatd.EventReaction}

// changeKinds are the kinds the changes stream carries.
var changeKinds = []chatd.EventKind{chatd.EventMember, chatd.EventRead}

// Endpoint is one webhook receiver.
type Endpoint struct {
	// URL receives a POST per event. Required: http or https.
	URL string
	// Secret signs the requests: whsec_ followed by the base64 of the key.
	// Required. Several, separated by spaces or commas, sign each request
	// with every one of them (ParseSecrets), for rotating a secret.
	Secret string
	// Kinds are the event kinds it receives. Empty means every kind,
	// notifications included while they are on.
	Kinds []chatd.EventKind
	// Chats, if any, are the only chats whose events it receives.
	Chats []string
}

// wants reports whether the endpoint receives events of kind.
func (e *Endpoint) wants(kind chatd.EventKind) bool {
	return len(e.Kinds) == 0 || slices.Contains(e.Kinds, kind)
}

// wantsEvents reports whether the endpoint receives any kind the delivery
// stream carries.
func (e *Endpoint) wantsEvents() bool {
	return slices.ContainsFunc(streamKinds, e.wants)
}

// WantsChanges reports whether the endpoint receives member changes or
// read positions: Kinds names kind, or is empty (every kind).
func (e *Endpoint) WantsChanges(kind chatd.EventKind) bool {
	return slices.Contains(changeKinds, kind) && e.wants(kind)
}

// ConsumerName is the durable consumer name of the endpoint at rawURL:
// stable across restarts and the same on every node.
func ConsumerName(rawURL string) string {
	sum := sha256.Sum256([]byte(rawURL))
	return ConsumerPrefix + hex.EncodeToString(sum[:6])
}

// Lock is a held election of the node that delivers to one endpoint.
type Lock = elect.Lock

// Store is what the webhooks need of PostgreSQL. *store.Store satisfies it
// through the node's wiring.
type Store interface {
	// TryLock tries, without waiting, to become the deliverer of the
	// endpoint whose consumer is name; (nil, false, nil) when another holds it.
	TryLock(ctx context.Context, name string) (Lock, bool, error)
	SetAside(ctx context.Context, f chatd.WebhookFailure) (int64, error)
	// Failures lists dead letters oldest first, only endpoint's unless it
	// is empty; CountFailures counts them so.
	Failures(ctx context.Context, endpoint string, after int64, limit int) ([]chatd.WebhookFailure, error)
	CountFailures(ctx context.Context, endpoint string) (int64, error)
	Failure(ctx context.Context, id int64) (chatd.WebhookFailure, error)
	DeleteFailure(ctx context.Context, id int64) error
}

// Config configures a Deliverer. Zero values take the documented defaults.
type Config struct {
	// Endpoints are the receivers. Empty: Run returns at once, and only
	// the dead-letter calls (Failed, Replay) have work to do.
	Endpoints []Endpoint
	// JS and Stream are the delivery stream. Required.
	JS     jetstream.JetStream
	Stream string
	// NotifyStream is where pkg/notify publishes offline notifications;
	// each endpoint that takes them consumes it too. Empty: notifications
	// are off, and an endpoint that asks only for them is an error.
	NotifyStream string
	// ChangesStream is where pkg/changes publishes member changes and read
	// positions; each endpoint that takes them consumes it too. Empty: an
	// endpoint that asks only for them is an error.
	ChangesStream string
	// Store elects deliverers and keeps dead letters. Required.
	Store Store
	// MaxAttempts is how many times one event is posted before it is set
	// aside. Zero means DefaultMaxAttempts. The count starts over on the
	// node that takes an endpoint over.
	MaxAttempts int
	// Timeout bounds one POST. Zero means DefaultTimeout.
	Timeout time.Duration
	// MinBackoff and MaxBackoff bound the wait between attempts: doubling
	// from MinBackoff up to MaxBackoff, with jitter; a Retry-After header
	// longer than the wait is honoured up to MaxRetryAfter. Zero means
	// DefaultMinBackoff, DefaultMaxBackoff and 10 × MaxBackoff.
	MinBackoff    time.Duration
	MaxBackoff    time.Duration
	MaxRetryAfter time.Duration
	// Workers is how many events an endpoint is posted at once, each of
	// another chat (a chat's events go one at a time, in order). Zero
	// means DefaultWorkers.
	Workers int
	// AckWait is the consumer's ack wait: how long an event held by a node
	// that died stays unacked before it is redelivered to the next one.
	// The holder keeps the events it holds alive meanwhile. Zero means
	// DefaultAckWait.
	AckWait time.Duration
	// Inactive is the consumers' inactive threshold: a consumer nobody
	// pulls from for this long is deleted, so an endpoint removed from the
	// configuration stops holding the stream's purge floor. Zero means 26 h
	// (the stream's default max age: by then its events are gone anyway).
	Inactive time.Duration
	// Standby is how often a node that does not deliver to an endpoint
	// tries to take it over. Zero means 2 s.
	Standby time.Duration
	Logger  *slog.Logger
	// Registerer receives the webhook metrics; nil means none.
	Registerer prometheus.Registerer
	// Now is the clock that stamps webhook-timestamp. Nil means time.Now.
	Now func() time.Time
}

func (c *Config) setDefaults() error {
	if c.JS == nil || c.Stream == "" || c.Store == nil {
		return errors.New("webhook: Config.JS, Stream and Store are required")
	}
	c.MaxAttempts = cmpOr(c.MaxAttempts, DefaultMaxAttempts)
	c.Timeout = cmpOr(c.Timeout, DefaultTimeout)
	c.MinBackoff = cmpOr(c.MinBackoff, DefaultMinBackoff)
	c.MaxBackoff = max(cmpOr(c.MaxBackoff, DefaultMaxBackoff), c.MinBackoff)
	c.MaxRetryAfter = cmpOr(c.MaxRetryAfter, 10*c.MaxBackoff)
	c.Workers = cmpOr(c.Workers, DefaultWorkers)
	c.AckWait = cmpOr(c.AckWait, DefaultAckWait)
	c.Inactive = cmpOr(c.Inactive, 26*time.Hour)
	c.Standby = cmpOr(c.Standby, 2*time.Second)
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	seen := map[string]bool{}
	for i := range c.Endpoints {
		if err := c.Endpoints[i].check(); err != nil {
			return err
		}
		if e := &c.Endpoints[i]; !e.wantsEvents() && !c.takesNotify(e) && !c.takesChanges(e) {
			if c.NotifyStream == "" && e.wants(chatd.EventNotify) {
				return fmt.Errorf("webhook %s takes only notify events, and notifications are off (--notify-after 0): turn them on or add kinds", redact(e.URL))
			}
			return fmt.Errorf("webhook %s takes only member or read changes, and no changes stream is configured: add kinds", redact(e.URL))
		}
		if seen[c.Endpoints[i].URL] {
			return fmt.Errorf("webhook %s is configured twice: list each URL once", redact(c.Endpoints[i].URL))
		}
		seen[c.Endpoints[i].URL] = true
	}
	return nil
}

// takesNotify reports whether e gets notifications: it asks for them and
// they are on.
func (c *Config) takesNotify(e *Endpoint) bool {
	return c.NotifyStream != "" && e.wants(chatd.EventNotify)
}

// takesChanges reports whether e gets member changes or reads.
func (c *Config) takesChanges(e *Endpoint) bool {
	return c.ChangesStream != "" && slices.ContainsFunc(changeKinds, e.wants)
}

func cmpOr[T int | time.Duration](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}

func (e *Endpoint) check() error {
	u, err := url.Parse(e.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("webhook %q: want an http:// or https:// URL", redact(e.URL))
	}
	if _, err := ParseSecrets(e.Secret); err != nil {
		return fmt.Errorf("webhook %s: %w", redact(e.URL), err)
	}
	for _, k := range e.Kinds {
		if !slices.Contains(Kinds, k) {
			return fmt.Errorf("webhook %s: event kind %q is not one an endpoint can take: use %s", redact(e.URL), k, kindList())
		}
	}
	return nil
}

func kindList() string {
	s := make([]string, len(Kinds))
	for i, k := range Kinds {
		s[i] = string(k)
	}
	return strings.Join(s, ", ")
}

// MaxSecrets is how many secrets may sign one endpoint's requests: the new
// and the old one while a secret is rotated, and one more to spare.
const MaxSecrets = 3

// ParseSecrets returns the signing keys of secrets: one whsec_<base64>
// secret, or several separated by spaces or commas (neither is in base64's
// alphabet), each of which signs every request.
func ParseSecrets(secrets string) ([][]byte, error) {
	parts := strings.FieldsFunc(secrets, func(r rune) bool { return r == ',' || unicode.IsSpace(r) })
	if len(parts) == 0 {
		return nil, errors.New("no secret: set whsec_ followed by the base64 of the key (e.g. whsec_$(openssl rand -base64 32))")
	}
	if len(parts) > MaxSecrets {
		return nil, fmt.Errorf("%d secrets: at most %d sign at once (the new and the old while rotating)", len(parts), MaxSecrets)
	}
	keys := make([][]byte, len(parts))
	for i, p := range parts {
		key, err := ParseSecret(p)
		if err != nil {
			if len(parts) > 1 {
				return nil, fmt.Errorf("secret %d of %d: %w", i+1, len(parts), err)
			}
			return nil, err
		}
		keys[i] = key
	}
	return keys, nil
}

// ParseSecret returns the signing key of a whsec_<base64> secret.
func ParseSecret(secret string) ([]byte, error) {
	b64, ok := strings.CutPrefix(secret, "whsec_")
	if !ok {
		return nil, errors.New("the secret must be whsec_ followed by the base64 of the key (e.g. whsec_$(openssl rand -base64 32))")
	}
	key, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return nil, fmt.Errorf("the secret after whsec_ is not standard base64: %w", err)
	}
	if len(key) < 16 {
		return nil, fmt.Errorf("the secret's key is %d bytes; use at least 24 (openssl rand -base64 32)", len(key))
	}
	return key, nil
}

// redact drops a URL's user info and query, which may hold credentials,
// for logs and errors.
func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	u.User, u.RawQuery = nil, ""
	return u.String()
}
