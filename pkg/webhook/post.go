package webhook

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/internal/elect"
	"github.com/valyala/fasthttp"
)

// outcome is what one attempt left of an event.
type outcome int

const (
	delivered  outcome = iota // the endpoint answered 2xx
	setAside                  // failed its last attempt, kept as a dead letter
	retryLater                // failed; try again after the returned wait
	givenBack                 // ctx ended first: the event goes back to the stream
)

// wait is how long a chat waits before its next attempt; asked: the
// endpoint's Retry-After set it.
type wait struct {
	d     time.Duration
	asked bool
}

// attempt posts one event for the n-th time through c, bound to ctx.
// After a failure it returns the wait before the next attempt, or sets
// the event aside when that was the last.
func (h *hook) attempt(ctx context.Context, c *client, it item, n int) (outcome, wait) {
	if ctx.Err() != nil {
		return givenBack, wait{}
	}
	res := h.post(c, it.id, it.body)
	if res.err == nil {
		h.m.delivered.Inc()
		return delivered, wait{}
	}
	if ctx.Err() != nil {
		return givenBack, wait{}
	}
	h.m.failed.Inc()
	h.sampled.Warn("webhook post failed; retrying with backoff", "err", res.err, "attempt", n)
	if n >= h.cfg.MaxAttempts {
		if !h.setAside(ctx, it, n, res.err) {
			return givenBack, wait{}
		}
		return setAside, wait{}
	}
	d := h.backoff(n, res.retryAfter)
	return retryLater, wait{d: d, asked: res.retryAfter > 0 && d >= res.retryAfter}
}

// setAside stores the event as a dead letter, retrying until PostgreSQL
// takes it (the event stays unacked meanwhile, so nothing is lost).
func (h *hook) setAside(ctx context.Context, it item, attempts int, lastErr error) bool {
	f := chatd.WebhookFailure{Endpoint: h.name, URL: h.ep.URL, WebhookID: it.id, Chat: it.chat,
		Seq: it.eventSeq, MessageID: it.messageID, Kind: it.kind,
		Body: it.body, Attempts: attempts, LastError: lastErr.Error()}
	for {
		dl, err := h.cfg.Store.SetAside(ctx, f)
		if err == nil {
			h.m.deadLettered.Inc()
			h.log.Warn("webhook event set aside after its last attempt; replay it with POST /api/admin/webhooks/failed/{id}/replay",
				"id", dl, "chat", f.Chat, "seq", f.Seq, "attempts", attempts, "err", lastErr)
			return true
		}
		h.sampled.Warn("set a webhook event aside; retrying (check PostgreSQL)", "err", err)
		if !elect.Sleep(ctx, h.cfg.MaxBackoff) {
			return false
		}
	}
}

// backoff is the wait after the attempt-th failure: doubling from
// MinBackoff up to MaxBackoff, in its upper half at random (so endpoints
// recovering together are not hit in step), or the endpoint's Retry-After
// when longer, up to MaxRetryAfter.
func (h *hook) backoff(attempt int, retryAfter time.Duration) time.Duration {
	d := h.cfg.MaxBackoff
	if attempt < 32 {
		d = min(h.cfg.MinBackoff<<(attempt-1), h.cfg.MaxBackoff)
	}
	d = d/2 + rand.N(d/2+1)
	if retryAfter > d {
		d = min(retryAfter, h.cfg.MaxRetryAfter)
	}
	return d
}

// result is one post's outcome: err is nil on a 2xx answer.
type result struct {
	err        error
	retryAfter time.Duration
}

// errStatus: the endpoint answered, but not 2xx.
var errStatus = errors.New("endpoint answered")

// post sends body once through c, signed with a fresh timestamp. c's
// context abandons it; Config.Timeout bounds it.
func (h *hook) post(c *client, id string, body []byte) result {
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI(h.ep.URL)
	req.Header.SetMethod(fasthttp.MethodPost)
	req.Header.SetContentType("application/json")
	req.Header.SetUserAgent("chatd-webhook")
	ts := h.cfg.Now().Unix()
	var tsBuf [20]byte
	var sig [64]byte // "v1," and 44 of base64
	req.Header.Set("webhook-id", id)
	req.Header.SetBytesV("webhook-timestamp", strconv.AppendInt(tsBuf[:0], ts, 10))
	req.Header.SetBytesV("webhook-signature", h.signer.AppendSignature(sig[:0], id, ts, body))
	req.SetBodyRaw(body)
	if err := c.do(req, resp, h.cfg.Timeout); err != nil {
		return result{err: fmt.Errorf("post: %w", err)}
	}
	code := resp.StatusCode()
	if code/100 == 2 {
		return result{}
	}
	reason := string(resp.Header.StatusMessage())
	if reason == "" {
		reason = http.StatusText(code)
	}
	return result{err: fmt.Errorf("%w %d %s", errStatus, code, reason),
		retryAfter: parseRetryAfter(string(resp.Header.Peek("Retry-After")), h.cfg.Now())}
}

// parseRetryAfter reads Retry-After as seconds or an HTTP date; zero if
// absent or unreadable.
func parseRetryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if n, err := strconv.Atoi(v); err == nil && n > 0 {
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}
