package client

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/chatd/chatd"
)

// Presence asks the server who of users is online anywhere in the cluster
// (GET /api/presence; at most 100 users). A user the server never saw is
// offline with a zero LastSeen. Presence events say when this changes for
// users who share a chat with the caller; this is the snapshot to start
// from, since the server sends none on connect.
func (c *Client) Presence(ctx context.Context, users ...string) (map[string]chatd.Presence, error) {
	var out struct {
		Presence map[string]struct {
			Online   bool       `json:"online"`
			LastSeen *time.Time `json:"last_seen"`
		} `json:"presence"`
	}
	path := "/api/presence?users=" + url.QueryEscape(strings.Join(users, ","))
	if err := c.rest(ctx, "GET", path, nil, &out); err != nil {
		return nil, fmt.Errorf("presence: %w", err)
	}
	states := make(map[string]chatd.Presence, len(out.Presence))
	for u, p := range out.Presence {
		st := chatd.Presence{Online: p.Online}
		if p.LastSeen != nil {
			st.LastSeen = *p.LastSeen
		}
		states[u] = st
	}
	return states, nil
}
