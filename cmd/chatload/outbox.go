package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/chatd/chatd/pkg/node"
)

// outboxPoller reads chatd's delivery buffer from GET /api/admin/outbox
// (the token's user must be in the target's AdminUsers).
type outboxPoller struct {
	url   string
	token string
	http  *http.Client
}

// outboxSample is one reading of the delivery buffer.
type outboxSample struct {
	PostgresDepth int64   // outbox rows not yet relayed to the stream
	OldestAge     float64 // seconds
	StreamMsgs    uint64  // messages the stream still retains
	StreamBacklog uint64  // stream messages not yet acked by every node (last+1−floor)
	Pins          int     // connections holding un-acked messages
	Connections   int
}

// drained reports the buffer empty: nothing left to relay, nothing any
// node or connection still waits on.
func (s outboxSample) drained() bool {
	return s.PostgresDepth == 0 && s.StreamBacklog == 0 && s.Pins == 0
}

func (p *outboxPoller) poll(ctx context.Context) (outboxSample, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.url+"/api/admin/outbox", nil)
	if err != nil {
		return outboxSample{}, fmt.Errorf("outbox request: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+p.token)
	resp, err := p.http.Do(req)
	if err != nil {
		return outboxSample{}, fmt.Errorf("outbox: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return outboxSample{}, fmt.Errorf("outbox: HTTP %d (is the admin user in the target's --admin-users?)", resp.StatusCode)
	}
	var v node.OutboxView
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		return outboxSample{}, fmt.Errorf("outbox: decode: %w", err)
	}
	s := outboxSample{
		PostgresDepth: v.PostgresDepth,
		OldestAge:     v.PostgresOldestAge,
		StreamMsgs:    v.Stream.Msgs,
		Pins:          len(v.Pins),
		Connections:   v.Connections,
	}
	if v.Stream.Last+1 > v.Stream.Floor && v.Stream.Floor > 0 {
		s.StreamBacklog = v.Stream.Last + 1 - v.Stream.Floor
	}
	return s, nil
}
