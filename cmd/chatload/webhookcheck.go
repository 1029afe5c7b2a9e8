package main

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"
)

// hookExamples is how many lost or misordered events a report names.
const hookExamples = 5

// expectedEvent is an accepted send: the event every receiver is owed.
type expectedEvent struct {
	chat string
	seq  int64
	id   string
}

// expectedEvents lists every accepted send of the run, of every kind.
func (r *recorder) expectedEvents() []expectedEvent {
	var out []expectedEvent
	for s := range r.senders {
		l := &r.senders[s]
		l.mu.Lock()
		for i := range l.recs {
			if rec := &l.recs[i]; rec.state == sendAccepted {
				out = append(out, expectedEvent{chat: r.plan.chats[rec.chat].id, seq: rec.seq, id: rec.id})
			}
		}
		l.mu.Unlock()
	}
	return out
}

// WebhookReport is one receiver's reconciliation: every accepted event
// against the requests it answered 2xx.
type WebhookReport struct {
	Receiver string `json:"receiver"`
	// Expected are the accepted events; Received the distinct webhook-ids
	// of this run's chats it accepted; Copies every request it accepted.
	Expected int64 `json:"expected"`
	Received int64 `json:"received"`
	Copies   int64 `json:"copies"`
	// Duplicates are copies of an event after its first; DuplicateMismatches
	// those whose webhook-id or body differ from the first copy's, or a
	// webhook-id that carried two events.
	Duplicates          int64 `json:"duplicates"`
	DuplicateMismatches int64 `json:"duplicate_mismatches"`
	// Lost are accepted events that never arrived.
	Lost int64 `json:"lost"`
	// OrderViolations are first copies that came after a later seq of their chat.
	OrderViolations int64 `json:"order_violations"`
	// Mismatched events carry another event id than the send accepted at
	// their chat and seq; Unexpected are of this run's chats but not an
	// accepted send (one whose answer the sender never got); Foreign are
	// of other chats (an earlier run on the same chatd).
	Mismatched int64    `json:"mismatched"`
	Unexpected int64    `json:"unexpected"`
	Foreign    int64    `json:"foreign"`
	Examples   []string `json:"examples,omitempty"`
	hookCounts
	Refusals []string `json:"refusals,omitempty"` // why the first refused requests were
	// DownAtS and UpAtS are the outage's actual start and end, seconds
	// after the load's start (zero without one).
	DownAtS float64 `json:"down_at_seconds,omitempty"`
	UpAtS   float64 `json:"up_at_seconds,omitempty"`
	// Complete: every accepted event arrived, the last CompleteS after the
	// load stopped (≤ 0: before it stopped).
	Complete  bool    `json:"complete"`
	CompleteS float64 `json:"complete_after_load_seconds"`
	Pass      bool    `json:"pass"`
}

// checkHookCopies reconciles a receiver's copies, in the order it accepted
// them, with the accepted events; ours tells this run's chats.
func checkHookCopies(copies []hookCopy, want []expectedEvent, ours func(chat string) bool, stoppedAt time.Time) WebhookReport {
	var r WebhookReport
	r.Expected = int64(len(want))
	wantID := make(map[evKey]string, len(want))
	for _, e := range want {
		wantID[evKey{e.chat, e.seq}] = e.id
	}
	note := func(format string, a ...any) {
		if len(r.Examples) < hookExamples {
			r.Examples = append(r.Examples, fmt.Sprintf(format, a...))
		}
	}
	first := map[evKey]int{}      // event → index of its first copy
	eventOf := map[string]evKey{} // webhook-id → event
	lastSeq := map[string]int64{} // chat → highest seq of a first copy
	for i, c := range copies {
		k := evKey{c.chat, c.seq}
		if !ours(c.chat) {
			r.Foreign++
			continue
		}
		r.Copies++
		if prev, ok := eventOf[c.webhookID]; ok && prev != k {
			r.DuplicateMismatches++
			note("webhook-id %s carried chat %s seq %d and seq %d", c.webhookID, c.chat, prev.seq, c.seq)
		}
		eventOf[c.webhookID] = k
		if f, ok := first[k]; ok {
			r.Duplicates++
			if fc := copies[f]; fc.webhookID != c.webhookID || fc.body != c.body {
				r.DuplicateMismatches++
				note("chat %s seq %d came as %s and again as %s (same body: %v)", c.chat, c.seq, fc.webhookID, c.webhookID, fc.body == c.body)
			}
			continue
		}
		first[k] = i
		if c.seq <= lastSeq[c.chat] {
			r.OrderViolations++
			note("chat %s: seq %d first arrived after seq %d", c.chat, c.seq, lastSeq[c.chat])
		} else {
			lastSeq[c.chat] = c.seq
		}
		switch id, ok := wantID[k]; {
		case !ok:
			r.Unexpected++
		case id != c.eventID:
			r.Mismatched++
			note("chat %s seq %d carried event %s, accepted as %s", c.chat, c.seq, c.eventID, id)
		}
	}
	r.Received = int64(len(eventOf))
	var last time.Time
	for _, e := range want {
		f, ok := first[evKey{e.chat, e.seq}]
		if !ok {
			r.Lost++
			note("lost: chat %s seq %d (event %s)", e.chat, e.seq, e.id)
			continue
		}
		if at := copies[f].at; at.After(last) {
			last = at
		}
	}
	r.Complete = r.Lost == 0
	if r.Complete && !last.IsZero() {
		r.CompleteS = last.Sub(stoppedAt).Seconds()
	}
	r.Pass = r.Lost == 0 && r.OrderViolations == 0 && r.DuplicateMismatches == 0 && r.Mismatched == 0
	return r
}

// hookSet is the run's webhook receivers.
type hookSet struct {
	receivers []*hookReceiver
	cancel    context.CancelFunc // ends the outages
	ctx       context.Context
}

// startHooks starts a receiver per cfg.webhookSpecs; nil without any.
func startHooks(ctx context.Context, cfg *Config) (*hookSet, error) {
	if len(cfg.webhookSpecs) == 0 {
		return nil, nil
	}
	key, err := parseWebhookSecret(cfg.WebhookSecret)
	if err != nil {
		return nil, err
	}
	hs := &hookSet{}
	hs.ctx, hs.cancel = context.WithCancel(ctx)
	for _, sp := range cfg.webhookSpecs {
		// The outage's times are in the report: a line now would race the
		// monitor's progress lines on cfg.Out.
		r := newHookReceiver(sp, key)
		if err := r.start(); err != nil {
			hs.stop()
			return nil, err
		}
		hs.receivers = append(hs.receivers, r)
	}
	return hs, nil
}

// loadStarted starts the outages, timed from the load's start.
func (hs *hookSet) loadStarted(at time.Time) {
	for _, r := range hs.receivers {
		r.startFaults(hs.ctx, at)
	}
}

// stop ends the outages and closes every receiver.
func (hs *hookSet) stop() {
	hs.cancel()
	for _, r := range hs.receivers {
		r.stop()
	}
}

// await waits until every receiver has every event of want or wait has
// passed, printing a progress line every progress (if > 0).
func (hs *hookSet) await(ctx context.Context, want []expectedEvent, wait, progress time.Duration, p func(string, ...any)) {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	start, lastPrint := time.Now(), time.Now()
	for {
		var parts []string
		done := true
		for _, r := range hs.receivers {
			n := r.has(want)
			done = done && n == len(want)
			parts = append(parts, fmt.Sprintf("%s %d/%d", r.spec.Addr, n, len(want)))
		}
		line := fmt.Sprintf("webhooks +%.0fs: %s", time.Since(start).Seconds(), strings.Join(parts, "  "))
		if done {
			p("%s: complete", line)
			return
		}
		if progress > 0 && time.Since(lastPrint) >= progress {
			lastPrint = time.Now()
			p("%s", line)
		}
		select {
		case <-ctx.Done():
			p("%s: gave up after %v (--webhook-wait)", line, wait)
			return
		case <-t.C:
		}
	}
}

// reports reconciles every receiver.
func (hs *hookSet) reports(want []expectedEvent, ours func(string) bool, loadStart, stoppedAt time.Time) []WebhookReport {
	var out []WebhookReport
	for _, r := range hs.receivers {
		copies, counts, whys, downAt, upAt := r.snapshot()
		wr := checkHookCopies(copies, want, ours, stoppedAt)
		wr.Receiver, wr.hookCounts, wr.Refusals = r.spec.String(), counts, whys
		if !downAt.IsZero() {
			wr.DownAtS = downAt.Sub(loadStart).Seconds()
		}
		if !upAt.IsZero() {
			wr.UpAtS = upAt.Sub(loadStart).Seconds()
		}
		wr.Pass = wr.Pass && counts.SignatureFailures == 0 && counts.BadPayloads == 0
		out = append(out, wr)
	}
	return out
}

// parseWebhookSecret returns the key of a whsec_<base64> secret, as the
// Standard Webhooks specification encodes it.
func parseWebhookSecret(s string) ([]byte, error) {
	if s == "" {
		return nil, errors.New("--webhook-receiver needs --webhook-secret (or CHATD_WEBHOOK_SECRET): chatd's whsec_ secret, to verify the signatures")
	}
	b64, ok := strings.CutPrefix(s, "whsec_")
	if !ok {
		return nil, errors.New("--webhook-secret: want whsec_ followed by the base64 of the key, as given to chatd")
	}
	key, err := base64.StdEncoding.DecodeString(b64)
	if err != nil || len(key) == 0 {
		return nil, fmt.Errorf("--webhook-secret: the part after whsec_ is not base64 of a key: %v", err)
	}
	return key, nil
}

func (w *WebhookReport) writeText(p func(string, ...any)) {
	verdict := "PASS"
	if !w.Pass {
		verdict = "FAIL"
	}
	p("webhook %s: %s", w.Receiver, verdict)
	complete := "NOT complete"
	if w.Complete {
		complete = fmt.Sprintf("complete %.1f s after the load stopped", w.CompleteS)
	}
	p("  events          %d expected, %d received (distinct webhook-id), lost %d; %s", w.Expected, w.Received, w.Lost, complete)
	p("  copies          %d accepted, duplicates %d (differing id or body %d), order violations %d, mismatched %d, unexpected %d, foreign %d",
		w.Copies, w.Duplicates, w.DuplicateMismatches, w.OrderViolations, w.Mismatched, w.Unexpected, w.Foreign)
	p("  requests        signature failures %d, bad payloads %d, injected failures %d, answered 503 while down %d; over %d TCP connections; %s accepted %d, %s and %s %d",
		w.SignatureFailures, w.BadPayloads, w.Injected, w.DownAnswers, w.Connections, notifyType, w.Notifies, memberType, readType, w.Changes)
	if w.DownAtS > 0 || w.UpAtS > 0 {
		p("  outage          from +%.1f s to +%.1f s of the load", w.DownAtS, w.UpAtS)
	}
	for _, e := range w.Examples {
		p("  %s", e)
	}
	for _, e := range w.Refusals {
		p("  refused: %s", e)
	}
}
