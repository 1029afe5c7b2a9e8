package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/chatd/chatd/pkg/client"
)

// Report is a run's result: what was asked, what chatd did, and whether
// every accepted message reached every recipient.
type Report struct {
	Scenario string         `json:"scenario"`
	Target   string         `json:"target"`
	Embedded bool           `json:"embedded"`
	Settings map[string]any `json:"settings"`

	Clients         int              `json:"clients"`
	Chats           int              `json:"chats"`
	StallingClients int              `json:"stalling_clients"`
	DroppingClients int              `json:"dropping_clients"`
	TargetRate      float64          `json:"target_rate"`
	Sent            int64            `json:"sent"`
	Accepted        int64            `json:"accepted"`
	AcceptedRate    float64          `json:"accepted_rate"` // measured window, per second
	SkippedTurns    int64            `json:"skipped_turns"` // pacer turns a stalled/saturated sender did not take
	UnknownOutcome  int64            `json:"unknown_outcome"`
	Rejects         map[string]int64 `json:"rejects"`

	ExpectedDeliveries    int64   `json:"expected_deliveries"`
	MsgFrames             int64   `json:"msg_frames"`
	DeliveriesPerAccepted float64 `json:"deliveries_per_accepted"`
	DuplicateFrames       int64   `json:"duplicate_frames"`
	DeliveredLive         int64   `json:"delivered_live"`
	DeliveredHistory      int64   `json:"delivered_history"`
	Resends               int64   `json:"resends"`

	Lost            int64         `json:"lost"`
	MissingPairs    int64         `json:"missing_deliveries"`
	LostExamples    []LostMessage `json:"lost_examples,omitempty"`
	DuplicatesToApp int64         `json:"duplicates_to_app"`
	Mismatched      int64         `json:"mismatched"`
	Foreign         int64         `json:"foreign"`
	DeliveryDrainS  float64       `json:"delivery_drain_seconds"`

	Reconnects   int64            `json:"reconnects"`
	Disconnects  map[string]int64 `json:"disconnects_by_code"`
	Stalls       int64            `json:"stalls"`
	Drops        int64            `json:"drops"`
	DialFailures int64            `json:"dial_failures"`

	SendToAccepted  Quantiles `json:"send_to_accepted"`
	SendToDelivered Quantiles `json:"send_to_delivered_live"`
	SendToHandedOut Quantiles `json:"send_to_handed_out"` // live or from history
	// SendToDeliveredSteady is SendToDelivered for the clients that neither
	// stall nor drop; absent when none does.
	SendToDeliveredSteady *Quantiles `json:"send_to_delivered_live_steady,omitempty"`

	OutboxObserved   bool    `json:"outbox_observed"`
	OutboxNote       string  `json:"outbox_note,omitempty"`
	OutboxPeakPG     int64   `json:"outbox_peak_postgres"`
	OutboxPeakStream uint64  `json:"outbox_peak_stream_backlog"`
	OutboxDrained    bool    `json:"outbox_drained"`
	OutboxDrainS     float64 `json:"outbox_drain_seconds"`

	ProcSource string  `json:"process_source"`
	ProcNote   string  `json:"process_note,omitempty"`
	PeakRSS    int64   `json:"peak_rss_bytes"`
	CPUSeconds float64 `json:"cpu_seconds_load"` // during warm-up + load
	CPUCores   float64 `json:"cpu_cores_load"`
	// CPUPerMessage is each party's CPU per accepted message over the same
	// span (PostgreSQL: the processes named postgres under chatd).
	CPUPerMessage *cpuCost `json:"cpu_per_accepted,omitempty"`
	RSSPerConnKiB float64  `json:"rss_per_connection_kib,omitempty"`

	// ChatdCounters are the first node's non-zero close, withdrawal,
	// queue-full and pacing counters after the drain (counters.go), since
	// it started; ChatdCountersNote says why they are missing.
	ChatdCounters     map[string]float64 `json:"chatd_counters,omitempty"`
	ChatdCountersNote string             `json:"chatd_counters_note,omitempty"`
	// Audits is the clients' history reads during the load; absent without
	// --audit-every.
	Audits *AuditReport `json:"audits,omitempty"`

	// Mixed is the mixed scenario's part; absent in the others.
	Mixed *MixedReport `json:"mixed,omitempty"`
	// Bad is the bad clients' part; absent without them. Every figure above
	// is the good clients' alone.
	Bad *BadReport `json:"bad_clients,omitempty"`
	// Baseline compares the live p99 with --baseline's; absent without it.
	Baseline *BaselineCheck `json:"baseline,omitempty"`
	// Webhooks reconciles each --webhook-receiver; absent without any.
	Webhooks []WebhookReport `json:"webhooks,omitempty"`

	Timeline []Sample `json:"timeline"`
	Pass     bool     `json:"pass"`
}

// closeCodes names the disconnect counts for the report.
func closeCodes(m map[int]int64) map[string]int64 {
	out := make(map[string]int64, len(m))
	for code, n := range m {
		out[fmt.Sprintf("%d %s", code, client.CloseReason(code))] = n
	}
	return out
}

// writeText prints the report for a person.
func (r *Report) writeText(w io.Writer) {
	p := func(format string, a ...any) { fmt.Fprintf(w, format+"\n", a...) }
	verdict := "PASS"
	if !r.Pass {
		verdict = "FAIL"
	}
	p("== chatload %s: %s ==", r.Scenario, verdict)
	p("target            %s (embedded=%v)", r.Target, r.Embedded)
	order := ""
	if r.Scenario == scenarioPairs {
		order = fmt.Sprintf(", sends %v", r.Settings["pairs_order"])
	}
	p("clients           %d in %d chats%s (stalling %d, dropping %d)", r.Clients, r.Chats, order, r.StallingClients, r.DroppingClients)
	if r.Bad != nil {
		p("                  good clients only, here and below; the %d bad ones are reported at the end", r.Bad.PoisonClients+r.Bad.FloodClients)
	}
	p("accepted          %d of %d sent; %.1f/s in the measured window (target %.0f/s); skipped turns %d; unknown outcome %d",
		r.Accepted, r.Sent, r.AcceptedRate, r.TargetRate, r.SkippedTurns, r.UnknownOutcome)
	p("rejects           %s", fmtMap(r.Rejects))
	p("lost              %d (missing deliveries %d)   duplicates to app %d   mismatched %d", r.Lost, r.MissingPairs, r.DuplicatesToApp, r.Mismatched)
	for _, l := range r.LostExamples {
		p("  lost %s chat %s seq %d from %s to %s (sent at %.0f ms)", l.ID, l.Chat, l.Seq, l.From, l.To, l.SentAtMS)
	}
	p("deliveries        %d expected; %d msg frames on the wire = %.4f per accepted·recipient; duplicate frames %d",
		r.ExpectedDeliveries, r.MsgFrames, r.DeliveriesPerAccepted, r.DuplicateFrames)
	p("handed out        live %d, history %d; every recipient complete %.1f s after the load stopped", r.DeliveredLive, r.DeliveredHistory, r.DeliveryDrainS)
	p("reconnects        %d  by close code: %s  (stalls %d, TCP connections cut %d, dial failures %d, resends %d)",
		r.Reconnects, fmtMap(r.Disconnects), r.Stalls, r.Drops, r.DialFailures, r.Resends)
	p("send→accepted     %s", fmtQ(r.SendToAccepted))
	p("send→delivered    %s (live only)", fmtQ(r.SendToDelivered))
	p("send→handed out   %s (live or history)", fmtQ(r.SendToHandedOut))
	if r.SendToDeliveredSteady != nil {
		p("  steady clients  %s (live, to clients that neither stall nor drop)", fmtQ(*r.SendToDeliveredSteady))
	}
	if r.OutboxObserved {
		drain := "did NOT drain"
		if r.OutboxDrained {
			drain = fmt.Sprintf("drained %.1f s after the load stopped", r.OutboxDrainS)
		}
		p("outbox            peak postgres %d, peak stream backlog %d; %s", r.OutboxPeakPG, r.OutboxPeakStream, drain)
		if r.OutboxNote != "" {
			p("                  %s", r.OutboxNote)
		}
	} else {
		p("outbox            not observed: %s", r.OutboxNote)
	}
	p("chatd process     peak RSS %s, CPU %.1f s (%.2f cores) — %s", mib(r.PeakRSS), r.CPUSeconds, r.CPUCores, r.ProcSource)
	if r.CPUPerMessage != nil {
		p("CPU per accepted  %s (warm-up and load, from /proc and getrusage)", r.CPUPerMessage)
	}
	if r.ProcNote != "" {
		p("                  %s", r.ProcNote)
	}
	if r.Audits != nil {
		p("audits            %d history reads (%d errors, %d messages); %s", r.Audits.Reads, r.Audits.Errors, r.Audits.Messages, fmtQ(r.Audits.Latency))
	}
	if r.ChatdCountersNote != "" {
		p("chatd counters    not read: %s", r.ChatdCountersNote)
	} else {
		p("chatd counters    %s", fmtMap(r.ChatdCounters))
	}
	if r.Mixed != nil {
		r.Mixed.writeText(p)
	}
	if r.Bad != nil {
		p("good clients      accepted %d, lost %d, refused %d (%s); live p50 %.2f ms p99 %.2f ms",
			r.Accepted, r.Lost, r.Bad.GoodRefused, fmtMap(r.Rejects), r.SendToDelivered.P50, r.SendToDelivered.P99)
		r.Bad.writeText(p)
	}
	for i := range r.Webhooks {
		r.Webhooks[i].writeText(p)
	}
	if r.Baseline != nil {
		r.Baseline.writeText(p)
	}
	if r.RSSPerConnKiB > 0 {
		p("RSS/connection    %.1f KiB", r.RSSPerConnKiB)
	}
}

// AuditReport is what the clients' history reads (--audit-every) saw.
type AuditReport struct {
	Reads    int64     `json:"reads"`
	Errors   int64     `json:"errors"`
	Messages int64     `json:"messages"`
	Latency  Quantiles `json:"latency"`
}

// fmtMap writes m as "k=v" pairs in key order, or "none".
func fmtMap[V int64 | float64](m map[string]V) string {
	if len(m) == 0 {
		return "none"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s=%v", k, m[k]))
	}
	return strings.Join(parts, " ")
}

func fmtQ(q Quantiles) string {
	return fmt.Sprintf("p50 %.2f ms  p99 %.2f ms  p99.9 %.2f ms  max %.2f ms  (n=%d)", q.P50, q.P99, q.P999, q.Max, q.Count)
}

func (r *Report) writeJSON(path string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("encode report: %w", err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	return nil
}
