package main

// An internal test: a command's package cannot be imported, so the smoke
// run calls runLoad, the same function main calls, against an embedded
// chatd (real PostgreSQL, real JetStream).

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestSmokePairs(t *testing.T) {
	rep := mustRun(t, Config{Scenario: scenarioPairs, Clients: 20, Rate: 100, Duration: 3 * time.Second})
	if rep.Accepted == 0 {
		t.Fatalf("got 0 accepted, want > 0")
	}
	if rep.DeliveriesPerAccepted < 1 {
		t.Errorf("got %.3f deliveries per accepted, want ≥ 1 (every recipient connected and healthy)", rep.DeliveriesPerAccepted)
	}
	if rep.SendToAccepted.Count == 0 || rep.SendToDelivered.Count == 0 {
		t.Errorf("got latency counts %d/%d, want both > 0", rep.SendToAccepted.Count, rep.SendToDelivered.Count)
	}
	// The embedded chatd's managed PostgreSQL runs here, so every party's
	// CPU per message is measured.
	if c := rep.CPUPerMessage; c == nil || c.ChatdUS <= 0 || c.PostgresUS <= 0 || c.ChatloadUS <= 0 {
		t.Errorf("CPU per accepted message: got %+v, want chatd, PostgreSQL and chatload all > 0", c)
	}
	if !rep.OutboxObserved || !rep.OutboxDrained {
		t.Errorf("outbox observed=%v drained=%v (%s), want both", rep.OutboxObserved, rep.OutboxDrained, rep.OutboxNote)
	}
}

// TestSmokeMixed runs every kind of event and both signals in small groups:
// every accepted event must reach every other member, and each member's
// state of each message must end equal to the server's.
func TestSmokeMixed(t *testing.T) {
	rep := mustRun(t, Config{Scenario: scenarioMixed, Groups: 4, Members: 5, Rate: 100, Duration: 4 * time.Second, MetaPct: 30, TypingRate: 10,
		DropPct: 20, DropEvery: time.Second})
	m := rep.Mixed
	if m == nil {
		t.Fatalf("got no mixed report")
	}
	for k := range numKinds {
		if m.AcceptedByKind[kindName(k)] == 0 {
			t.Errorf("got 0 accepted %s events, want > 0: %v", kindName(k), m.AcceptedByKind)
		}
	}
	if m.MessagesChecked == 0 || m.StateMismatches != 0 || m.StateError != "" {
		t.Errorf("got %d messages checked, %d state mismatches (%v), error %q; want > 0, 0, none",
			m.MessagesChecked, m.StateMismatches, m.StateExamples, m.StateError)
	}
	if m.Reads == 0 || m.TypingSent == 0 {
		t.Errorf("got %d reads and %d typing sent, want both > 0", m.Reads, m.TypingSent)
	}
}

// TestSmokeFaults stalls and drops clients so that chatd abandons some
// (lease 500 ms, 2 attempts, 3 pending) and others reconnect after a cut:
// every accepted message must still reach every recipient, via history.
// A stalled client receives ~5 msg/s and is paced at 3 un-acked; the
// first of them has its last lease end about 1.3 s into the stall (the
// settle wait, two leases), before the shortest stall (1.5 s) ends.
func TestSmokeFaults(t *testing.T) {
	dir := t.TempDir()
	rep := mustRun(t, Config{
		Scenario: scenarioPairs, Clients: 20, Rate: 100, Duration: 6 * time.Second,
		StallPct: 20, StallFor: 3 * time.Second, DropPct: 20, DropEvery: time.Second,
		Lease: 500 * time.Millisecond, MaxAttempts: 2, MaxPending: 3,
		JSONPath: filepath.Join(dir, "r.json"), HTMLPath: filepath.Join(dir, "r.html"),
	})
	if rep.Accepted == 0 {
		t.Fatalf("got 0 accepted, want > 0")
	}
	if rep.Stalls == 0 || rep.Drops == 0 || rep.Reconnects == 0 {
		t.Errorf("got stalls %d drops %d reconnects %d, want all > 0", rep.Stalls, rep.Drops, rep.Reconnects)
	}
	abandoned := rep.Disconnects["4000 abandoned"] + rep.Disconnects["4001 overloaded"]
	if abandoned == 0 {
		t.Errorf("got disconnects %v, want some 4000/4001 from the stalled clients", rep.Disconnects)
	}
	for _, p := range []string{"r.json", "r.html"} {
		b, err := os.ReadFile(filepath.Join(dir, p))
		if err != nil || len(b) == 0 {
			t.Errorf("report %s: %v (%d bytes)", p, err, len(b))
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "r.html")); !strings.Contains(string(b), "<svg") || strings.Contains(string(b), "<script") {
		t.Errorf("html report: want inline svg and no script")
	}
}

// TestSmokeAppWork runs clients whose app spends CPU on each message with
// the SDK reading one ahead, audits history over REST, and stalls some:
// the report must count the audits, read chatd's counters, and time the
// steady clients apart.
func TestSmokeAppWork(t *testing.T) {
	rep := mustRun(t, Config{Scenario: scenarioGroups, Groups: 4, Members: 5, Rate: 50, Duration: 3 * time.Second,
		ProcessCost: 200 * time.Microsecond, ReadAhead: 1, AuditEvery: 500 * time.Millisecond,
		StallPct: 20, StallFor: time.Second})
	if a := rep.Audits; a == nil || a.Reads == 0 || a.Errors != 0 || a.Messages == 0 {
		t.Errorf("got audits %+v, want reads and messages > 0 without errors", a)
	}
	if rep.ChatdCountersNote != "" {
		t.Errorf("chatd counters not read: %s", rep.ChatdCountersNote)
	}
	if q := rep.SendToDeliveredSteady; q == nil || q.Count == 0 || q.Count >= rep.SendToDelivered.Count {
		t.Errorf("got steady clients' deliveries %+v, want some, fewer than all %d", q, rep.SendToDelivered.Count)
	}
}

// mustRun runs a load and fails the test unless it completed with nothing
// lost and nothing handed to an application twice.
func mustRun(t *testing.T, cfg Config) *Report {
	t.Helper()
	var out strings.Builder
	cfg.Out = &out
	cfg.Progress = time.Second
	cfg.Drain = 15 * time.Second
	cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rep, err := runLoad(ctx, cfg)
	if err != nil {
		t.Fatalf("runLoad: %v", err)
	}
	rep.writeText(&out)
	t.Log("\n" + out.String())
	if err := writeFiles(&cfg, rep); err != nil {
		t.Errorf("write reports: %v", err)
	}
	if rep.Lost != 0 || rep.MissingPairs != 0 {
		t.Errorf("got lost %d (missing %d), want 0: %+v", rep.Lost, rep.MissingPairs, rep.LostExamples)
	}
	if rep.DuplicatesToApp != 0 || rep.Mismatched != 0 {
		t.Errorf("got %d duplicates to the app and %d mismatched, want 0", rep.DuplicatesToApp, rep.Mismatched)
	}
	if !rep.Pass {
		t.Errorf("report did not pass")
	}
	return rep
}

// TestSmokeBadClients runs poison clients and a typing flooder beside the
// good pairs against an embedded chatd: the tool must carry the run through
// the bad connections' closes, report what they sent and were told, and
// still reconcile the good clients exactly. Whether chatd kept the good
// clients unharmed is the run's verdict, not this test's.
func TestSmokeBadClients(t *testing.T) {
	cfg := Config{Scenario: scenarioPairs, Clients: 20, Rate: 100, Duration: 3 * time.Second,
		PoisonPct: 10, TypingFloodPct: 10, TypingFloodRate: 200, Progress: time.Second, Drain: 15 * time.Second}
	var out strings.Builder
	cfg.Out = &out
	cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rep, err := runLoad(ctx, cfg)
	if err != nil {
		t.Fatalf("runLoad: %v", err)
	}
	rep.writeText(&out)
	t.Log("\n" + out.String())
	if rep.Clients != 16 || rep.Accepted == 0 || rep.Lost != 0 {
		t.Errorf("got %d good clients, %d accepted, %d lost; want 16, > 0, 0", rep.Clients, rep.Accepted, rep.Lost)
	}
	b := rep.Bad
	if b == nil {
		t.Fatalf("got no bad-client report")
	}
	if b.PoisonClients != 2 || b.FloodClients != 2 || b.Connects < 4 {
		t.Errorf("got %d poison, %d flood clients, %d connects; want 2, 2, ≥ 4", b.PoisonClients, b.FloodClients, b.Connects)
	}
	if b.PoisonSent["nul"] == 0 || len(b.PoisonAnswers["nul"]) == 0 || b.TypingSent == 0 {
		t.Errorf("got poison sent %v, answers %v, typing sent %d; want NUL sends answered and typing sent",
			b.PoisonSent, b.PoisonAnswers, b.TypingSent)
	}
	if rep.Pass != (b.GoodRefused == 0) {
		t.Errorf("got pass %v with %d good refusals, want pass exactly when none", rep.Pass, b.GoodRefused)
	}
}
