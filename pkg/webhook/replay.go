package webhook

import (
	"context"
	"fmt"
	"time"

	"github.com/chatd/chatd"
)

// replayPage is how many dead letters ReplayMany reads from PostgreSQL at
// a time.
const replayPage = 100

// countTimeout bounds the count of what is left after a replay.
const countTimeout = 5 * time.Second

// ReplayMany replays up to limit dead letters oldest first, of endpoint (a
// consumer name) or of every endpoint when it is empty, as Replay does one.
// An endpoint that refuses one is tried no further in this call, so that it
// still gets its dead letters in the order they were set aside; dead
// letters of endpoints no longer configured stay, each such endpoint named
// once in the report. It returns ErrUnknownEndpoint when endpoint names no
// configured endpoint, and stops early, with what it did, when ctx ends.
func (d *Deliverer) ReplayMany(ctx context.Context, endpoint string, limit int) (chatd.WebhookReplay, error) {
	var rep chatd.WebhookReplay
	if endpoint != "" && d.hooks[endpoint] == nil {
		return rep, fmt.Errorf("%s: %w", endpoint, ErrUnknownEndpoint)
	}
	stopped := map[string]bool{}
	clients := map[string]*client{}
	defer func() {
		for _, c := range clients {
			c.close()
		}
	}()
	stop := func(f chatd.WebhookFailure, why string) {
		stopped[f.Endpoint] = true
		rep.Stopped = append(rep.Stopped, chatd.WebhookReplayStop{Endpoint: f.Endpoint, ID: f.ID, Error: why})
	}
	tried := 0
	var after int64
	for tried < limit && ctx.Err() == nil {
		page, err := d.cfg.Store.Failures(ctx, endpoint, after, replayPage)
		if err != nil {
			return rep, err
		}
		for _, f := range page {
			after = f.ID
			if stopped[f.Endpoint] {
				continue
			}
			if tried == limit || ctx.Err() != nil {
				break
			}
			h := d.hooks[f.Endpoint]
			if h == nil {
				stop(f, fmt.Sprintf("endpoint %s (%s) is no longer configured", f.Endpoint, redact(f.URL)))
				continue
			}
			c := clients[f.Endpoint]
			if c == nil {
				c = newClient(ctx, &d.cfg, h.ep.URL, 1)
				clients[f.Endpoint] = c
			}
			tried++
			if res := h.post(c, f.WebhookID, f.Body); res.err != nil {
				stop(f, res.err.Error())
				continue
			}
			h.m.delivered.Inc()
			if err := d.cfg.Store.DeleteFailure(ctx, f.ID); err != nil {
				// Delivered but still set aside: a later replay sends it
				// again, under the same webhook-id.
				return rep, err
			}
			rep.Replayed++
		}
		if len(page) < replayPage {
			break
		}
	}
	// The count is read apart from ctx's end, so that a replay cut short
	// by it still says what is left.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), countTimeout)
	defer cancel()
	left, err := d.cfg.Store.CountFailures(cctx, endpoint)
	if err != nil {
		return rep, err
	}
	rep.Left = left
	return rep, nil
}
