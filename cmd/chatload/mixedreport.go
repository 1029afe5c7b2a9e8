package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/chatd/chatd/pkg/client"
)

// MixedReport is the mixed scenario's part of the report: events by kind,
// the final-state check, and the best-effort signals.
type MixedReport struct {
	Mix     string  `json:"mix"`
	MetaPct float64 `json:"meta_pct"`
	// AcceptedByKind counts every accepted event; RateByKind those of the
	// measured window, per second. Every one is reconciled like a message
	// (lost, duplicates to app, mismatched in the report's main fields).
	AcceptedByKind map[string]int64   `json:"accepted_by_kind"`
	RateByKind     map[string]float64 `json:"rate_by_kind"`

	// MessagesChecked messages were compared at every member of their chat
	// with the server's current state; StateMismatches (message, member)
	// pairs differed.
	MessagesChecked int64           `json:"messages_checked"`
	StateMismatches int64           `json:"state_mismatches"`
	StateExamples   []StateMismatch `json:"state_examples,omitempty"`
	StateError      string          `json:"state_error,omitempty"`

	// Signals, best effort: never a failure.
	Reads            int64 `json:"reads"`
	ReadFailures     int64 `json:"read_failures"`
	ReceiptsExpected int64 `json:"receipts_expected"` // reads × other members
	ReceiptsReceived int64 `json:"receipts_received"`
	TypingSent       int64 `json:"typing_sent"`
	TypingFailures   int64 `json:"typing_failures"`
	TypingReceived   int64 `json:"typing_received"` // the server passes one per connection and chat per 3 s
}

func buildMixed(ctx context.Context, cfg *Config, p *plan, rec *recorder, fl *fleet, clients []*client.Client) *MixedReport {
	m := fl.mix
	r := &MixedReport{
		Mix: cfg.Mix, MetaPct: cfg.MetaPct,
		AcceptedByKind: make(map[string]int64), RateByKind: make(map[string]float64),
		Reads: m.reads.Load(), ReadFailures: m.readFailures.Load(), ReceiptsReceived: m.receipts.Load(),
		TypingSent: m.typingSent.Load(), TypingFailures: m.typingFailures.Load(), TypingReceived: m.typingRecv.Load(),
	}
	for k := range numKinds {
		name := kindName(k)
		r.AcceptedByKind[name] = rec.acceptedKind[k].Load()
		r.RateByKind[name] = float64(rec.acceptedKindMeasured[k].Load()) / cfg.Duration.Seconds()
	}
	if len(p.chats) > 0 {
		r.ReceiptsExpected = (r.Reads - r.ReadFailures) * int64(cfg.Members-1)
	}
	sc, err := checkStates(ctx, p, clients, m.derived, 20)
	r.MessagesChecked, r.StateMismatches, r.StateExamples = sc.Messages, sc.Mismatches, sc.Examples
	if err != nil {
		r.StateError = err.Error()
	}
	return r
}

func (r *MixedReport) writeText(p func(string, ...any)) {
	p("events by kind    accepted %s", fmtMap(r.AcceptedByKind))
	p("                  measured window, per second: %s", fmtRates(r.RateByKind))
	p("final states      %d messages compared at every member with the server's; %d mismatched", r.MessagesChecked, r.StateMismatches)
	for _, e := range r.StateExamples {
		p("  state of %s in %s at %s: got %s, want %s", e.ID, e.Chat, e.Member, e.Got, e.Want)
	}
	if r.StateError != "" {
		p("  state check failed: %s", r.StateError)
	}
	p("signals           reads %d (failed %d), receipts %d of %d; typing sent %d (failed %d), received %d (best effort)",
		r.Reads, r.ReadFailures, r.ReceiptsReceived, r.ReceiptsExpected, r.TypingSent, r.TypingFailures, r.TypingReceived)
}

func fmtRates(m map[string]float64) string {
	var parts []string
	for k := range numKinds {
		parts = append(parts, fmt.Sprintf("%s=%.1f", kindName(k), m[kindName(k)]))
	}
	return strings.Join(parts, " ")
}
