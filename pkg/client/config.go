package client

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Config configures a Client. Only URL and one of Token or TokenFunc are
// required; every other zero value means the documented default.
type Config struct {
	// URL is chatd's base HTTP(S) URL, e.g. http://127.0.0.1:8080. REST calls
	// go to URL/api/..., the WebSocket to URL/ws (ws:// or wss://).
	URL string
	// URLs are more chatd nodes (base URLs like URL) of the same cluster.
	// A node can be up but useless to its clients (cut off from NATS, it
	// closes them with 1001 going away) or gone; a client with somewhere
	// else to go then moves on: every reconnect, after a failed dial or an
	// ended session, tries the next of URL, URLs[0], URLs[1], … in turn.
	// REST calls (history resync included) go to the node of the latest
	// dial. Zero: URL only.
	URLs []string
	// Token is the JWT presented on every request. Ignored when TokenFunc is set.
	Token string
	// TokenFunc, when set, is called before every dial and REST call, so a
	// long-lived client can present a fresh token as the old one expires.
	TokenFunc func(ctx context.Context) (string, error)
	// RefreshBefore is how long before the WebSocket token's exp the client
	// asks TokenFunc for a new one and refreshes the open session in-band
	// (the server closes with 4401 at exp otherwise). The exp is read from
	// the JWT's payload, unverified. Zero: once 80% of the token's lifetime,
	// counted from when the client got it, has passed. A lead over half the
	// lifetime counts as half, so a short token is not refreshed in a loop.
	// Without TokenFunc
	// there is nothing to refresh with and the session ends at exp.
	RefreshBefore time.Duration

	// Chats are tracked from seq 0 (their whole retained history is handed
	// out once). Chats seen later in a `msg` frame are tracked automatically
	// from seq 0 as well; TrackFrom starts a chat at a later seq.
	Chats []string
	// TrackAll lists the caller's chats (GET /api/chats) after every hello and
	// tracks each of them, so chats joined while offline are synced too.
	TrackAll bool
	// TrackStart is where TrackAll starts each chat of its first listing:
	// StartAtBeginning (the zero value) hands out the chat's whole retained
	// history once, StartNow only what comes after, StartUnread what the
	// user has not marked read (Read), so a bot that marks what it handled
	// resumes there after a restart. Chats that appear in later listings are
	// new to the client and start at their beginning either way.
	TrackStart Start

	// HTTPClient makes the REST calls. Zero: a client of its own with a 30 s
	// timeout, whose idle connections are closed when the client stops.
	HTTPClient *http.Client
	// Logger receives the client's logs, tagged component=client.
	// Zero: slog.Default().
	Logger *slog.Logger

	// AckDelay is how long received ids are collected before one `ack` frame
	// carries them all. Zero: 50 ms; negative: each id is acked as soon as
	// the previous ack frame is written (about a frame per delivery).
	AckDelay time.Duration
	// GapWait is how long a live frame beyond a gap waits for the gap to be
	// filled live (redeliveries may overtake) before the gap is fetched from
	// history. Zero: 200 ms; negative: fetch at once.
	GapWait time.Duration
	// MaxHeld bounds the frames held per chat behind a gap. Past it the newest
	// are dropped; they were acked, and come back from history when the gap
	// is filled. Zero: 4096.
	MaxHeld int
	// EventBuffer is the capacity of the Events channel. Zero: 1024.
	EventBuffer int

	// BackoffMin and BackoffMax bound the reconnect delay: attempt n waits a
	// uniformly random time in [BackoffMin, min(BackoffMax, BackoffMin·2ⁿ)].
	// Zero: 100 ms and 10 s.
	BackoffMin time.Duration
	BackoffMax time.Duration

	// DialTimeout bounds the WebSocket handshake plus the wait for `hello`.
	// Zero: 10 s.
	DialTimeout time.Duration
	// WriteTimeout bounds each frame write. Zero: 10 s.
	WriteTimeout time.Duration
	// MaxFrameBytes is the largest frame accepted from the server.
	// Zero: 1 MiB.
	MaxFrameBytes int64
}

func (cfg *Config) setDefaults() {
	if cfg.HTTPClient == nil {
		// Its own transport (not http.DefaultTransport's shared pool), so
		// the client can close its idle connections when it stops.
		cfg.HTTPClient = &http.Client{Timeout: 30 * time.Second, Transport: http.DefaultTransport.(*http.Transport).Clone()}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	cfg.Logger = cfg.Logger.With("component", "client")
	if cfg.AckDelay == 0 {
		cfg.AckDelay = 50 * time.Millisecond
	}
	if cfg.GapWait == 0 {
		cfg.GapWait = 200 * time.Millisecond
	} else if cfg.GapWait < 0 {
		cfg.GapWait = 0
	}
	setInt(&cfg.MaxHeld, 4096)
	setInt(&cfg.EventBuffer, 1024)
	setDur(&cfg.BackoffMin, 100*time.Millisecond)
	setDur(&cfg.BackoffMax, 10*time.Second)
	setDur(&cfg.DialTimeout, 10*time.Second)
	setDur(&cfg.WriteTimeout, 10*time.Second)
	if cfg.MaxFrameBytes <= 0 {
		cfg.MaxFrameBytes = 1 << 20
	}
}

func setDur(d *time.Duration, def time.Duration) {
	if *d <= 0 {
		*d = def
	}
}

func setInt(n *int, def int) {
	if *n <= 0 {
		*n = def
	}
}

// endpoint is one chatd node's REST base and WebSocket URL.
type endpoint struct{ rest, ws string }

// endpointList derives the endpoint of Config.URL and of each of URLs.
func endpointList(cfg *Config) ([]endpoint, error) {
	var eps []endpoint
	for _, raw := range append([]string{cfg.URL}, cfg.URLs...) {
		rest, ws, err := endpoints(raw)
		if err != nil {
			return nil, err
		}
		eps = append(eps, endpoint{rest: rest, ws: ws})
	}
	return eps, nil
}

// endpoints derives the REST base and the WebSocket URL from a base URL.
func endpoints(raw string) (restBase, wsURL string, err error) {
	if raw == "" {
		return "", "", errors.New("config: URL is required")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", "", fmt.Errorf("config: parse URL: %w", err)
	}
	switch u.Scheme {
	case "http":
		u.Scheme = "ws"
	case "https":
		u.Scheme = "wss"
	default:
		return "", "", fmt.Errorf("config: URL scheme %q, want http or https", u.Scheme)
	}
	base := strings.TrimSuffix(raw, "/")
	u.Path = strings.TrimSuffix(u.Path, "/") + "/ws"
	u.RawQuery, u.Fragment = "", ""
	return base, u.String(), nil
}
