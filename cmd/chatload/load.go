package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/chatd/chatd/pkg/client"
)

// runLoad runs one load from setup to reconciliation and returns its
// report. An error means the run could not be carried out; a run that
// completes with lost messages returns a report whose Pass is false.
func runLoad(ctx context.Context, cfg Config) (rep *Report, err error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	if cfg.Scenario == scenarioIdle {
		cfg.Rate, cfg.Warmup = 0, 0
	}
	var baseP99 float64
	if cfg.Baseline != "" {
		if baseP99, err = loadBaseline(cfg.Baseline); err != nil {
			return nil, err
		}
	}
	if len(cfg.webhookSpecs) > 0 && cfg.URL == "" && cfg.tuneNode == nil {
		return nil, errors.New("--webhook-receiver needs --url: a chatd started with --webhook for each receiver")
	}
	hooks, err := startHooks(ctx, &cfg)
	if err != nil {
		return nil, err
	}
	if hooks != nil {
		defer hooks.stop()
	}
	tgt, err := startTarget(ctx, &cfg)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, tgt.stop()) }()

	runID := strconv.FormatUint(rand.Uint64()%(1<<40), 36)
	p := newPlan(&cfg, runID)
	rec := newRecorder(p, runID, time.Now())
	fl, err := newFleet(&cfg, p, rec, tgt)
	if err != nil {
		return nil, err
	}
	defer func() {
		if serr := fl.shutdown(); serr != nil {
			cfg.Logger.Warn("clients ended with errors", "err", serr)
		}
	}()
	clients := make([]*client.Client, len(fl.clients))
	for i, lc := range fl.clients {
		clients[i] = lc.c
	}
	if err := p.createChats(ctx, clients); err != nil {
		return nil, err
	}
	fl.track()
	bad, err := newBadFleet(ctx, &cfg, p, tgt, runID, fl.http)
	if err != nil {
		return nil, err
	}

	hc := &http.Client{Timeout: 5 * time.Second}
	proc := newProcSampler(&cfg, tgt, hc)
	rssBefore, _, _ := proc.sample(ctx)
	cctx, ccancel := context.WithTimeout(ctx, 2*time.Minute+time.Duration(len(p.users))*time.Second/time.Duration(cfg.ConnectRate))
	err = fl.connect(cctx)
	ccancel()
	if err != nil {
		return nil, err
	}
	rssConnected, _, _ := proc.sample(ctx)

	ob, obNote := newOutbox(ctx, &cfg, tgt, hc)
	mon := newMonitor(&cfg, rec, fl, ob, proc, time.Now())
	mctx, mcancel := context.WithCancel(ctx)
	var mwg sync.WaitGroup
	mwg.Add(1)
	go func() {
		defer mwg.Done()
		mon.run(mctx)
	}()
	stopMonitor := func() {
		mcancel()
		mwg.Wait()
	}
	defer stopMonitor()

	loadStart := time.Now()
	if hooks != nil {
		hooks.loadStarted(loadStart)
	}
	run := runLoadPhase(ctx, &cfg, rec, fl, bad, mon, proc)
	mon.setPhase("drain")
	dctx, dcancel := context.WithTimeout(ctx, cfg.Drain)
	defer dcancel()
	fl.awaitSends(dctx)
	rec.awaitDelivered(dctx, 200*time.Millisecond)
	deliveryDrain := time.Since(run.stoppedAt) // from the load's stop, not from the last answer
	if ob != nil {
		select {
		case <-mon.drained:
		case <-dctx.Done():
		}
	}
	stopMonitor()
	mon.sample(ctx) // the final state, after the drain
	var hookReps []WebhookReport
	if hooks != nil {
		// After the drain every send has its answer: the accepted ones are final.
		want := rec.expectedEvents()
		hooks.await(ctx, want, cfg.WebhookWait, cfg.Progress, func(f string, a ...any) { fmt.Fprintf(cfg.Out, f+"\n", a...) })
		ours := func(chat string) bool { _, ok := p.chatIdx[chat]; return ok }
		hookReps = hooks.reports(want, ours, loadStart, run.stoppedAt)
	}

	rep = buildReport(&cfg, tgt, p, rec, fl, mon, run, deliveryDrain)
	if rep.StallingClients+rep.DroppingClients > 0 {
		q := rec.steadyLat.summary()
		rep.SendToDeliveredSteady = &q
	}
	if rep.ChatdCounters, err = scrapeCounters(ctx, hc, tgt.url); err != nil {
		rep.ChatdCountersNote, err = err.Error(), nil
	}
	if cfg.AuditEvery > 0 {
		rep.Audits = &AuditReport{Reads: fl.app.audits.Load(), Errors: fl.app.auditErrors.Load(),
			Messages: fl.app.auditMsgs.Load(), Latency: fl.app.auditLat.summary()}
	}
	rep.Webhooks = hookReps
	for _, w := range hookReps {
		rep.Pass = rep.Pass && w.Pass
	}
	if bad != nil {
		rep.Bad = buildBad(&cfg, bad.stats, rep.Rejects)
		rep.Pass = rep.Pass && rep.Bad.Pass()
	}
	if cfg.Baseline != "" {
		rep.Baseline = checkBaseline(cfg.Baseline, baseP99, rep.SendToDelivered.P99, cfg.BaselineFactor)
		rep.Pass = rep.Pass && rep.Baseline.OK
	}
	if fl.mix != nil {
		rep.Mixed = buildMixed(ctx, &cfg, p, rec, fl, clients)
		rep.Pass = rep.Pass && rep.Mixed.StateMismatches == 0 && rep.Mixed.StateError == ""
	}
	rep.OutboxObserved = ob != nil
	if ob == nil {
		rep.OutboxNote = obNote
	}
	if cfg.Scenario == scenarioIdle && rssConnected > rssBefore {
		rep.RSSPerConnKiB = float64(rssConnected-rssBefore) / 1024 / float64(len(p.users))
	}
	return rep, nil
}

// loadRun is what the load phase measured.
type loadRun struct {
	fired, backlogDropped int64
	cpuStart, cpuStop     float64
	marksStart, marksStop cpuMarks
	elapsed               time.Duration
	stoppedAt             time.Time
}

// runLoadPhase paces sends through warm-up and the measured duration,
// with the fault injectors and the bad clients (bad may be nil) running,
// and stops the load.
func runLoadPhase(ctx context.Context, cfg *Config, rec *recorder, fl *fleet, bad *badFleet, mon *monitor, proc procSampler) loadRun {
	var run loadRun
	// PostgreSQL's CPU is its processes under chatd: the separate one of
	// --pid, or this process when chatd is embedded; with several nodes it
	// is not theirs, and every postgres process counts.
	pgRoot := 0
	switch {
	case len(cfg.PIDs) == 1:
		pgRoot = cfg.PIDs[0]
	case len(cfg.PIDs) == 0 && cfg.URL == "":
		pgRoot = os.Getpid()
	}
	_, run.cpuStart, _ = proc.sample(ctx)
	run.marksStart = readCPUMarks(rec.accepted.Load(), pgRoot)
	start := time.Now()
	rec.measureFrom.Store(rec.since(start.Add(cfg.Warmup)))
	mon.setPhase("warmup")
	if cfg.Warmup == 0 {
		mon.setPhase("load")
	}
	warm := time.AfterFunc(cfg.Warmup, func() { mon.setPhase("load") })
	defer warm.Stop()
	fl.startDrops()
	fl.startTyping()
	fl.startAudits()
	lctx, cancel := context.WithTimeout(ctx, cfg.Warmup+cfg.Duration)
	defer cancel()
	// The bad clients stop with the load: the drain after it is the good
	// clients' delivery, which they must not be part of.
	var bwg sync.WaitGroup
	if bad != nil {
		bwg.Add(1)
		go func() {
			defer bwg.Done()
			bad.run(lctx)
		}()
	}
	run.fired, run.backlogDropped = newPacer(cfg.Rate).run(lctx, fl.fire)
	run.stoppedAt = time.Now()
	run.elapsed = run.stoppedAt.Sub(start)
	cancel()
	bwg.Wait()
	fl.stopLoad()
	_, run.cpuStop, _ = proc.sample(ctx)
	run.marksStop = readCPUMarks(rec.accepted.Load(), pgRoot)
	return run
}

// newOutbox returns a poller if the target answers the admin outbox view
// for the admin user, else nil and why.
func newOutbox(ctx context.Context, cfg *Config, t *target, hc *http.Client) (*outboxPoller, string) {
	tok, err := t.token(cfg.AdminUser)
	if err != nil {
		return nil, err.Error()
	}
	ob := &outboxPoller{url: t.url, token: tok, http: hc}
	if _, err := ob.poll(ctx); err != nil {
		cfg.Logger.Warn("outbox not observable", "err", err)
		return nil, err.Error()
	}
	return ob, ""
}

func buildReport(cfg *Config, t *target, p *plan, rec *recorder, fl *fleet, mon *monitor, run loadRun, deliveryDrain time.Duration) *Report {
	st := fl.stats()
	rc := rec.reconcile(20)
	r := &Report{
		Scenario: cfg.Scenario, Target: strings.Join(t.urls, ","), Embedded: t.embedded,
		Settings: map[string]any{
			"clients": cfg.Clients, "pairs_order": cfg.PairsOrder, "groups": cfg.Groups, "members": cfg.Members, "rate": cfg.Rate,
			"duration": cfg.Duration.String(), "warmup": cfg.Warmup.String(),
			"stall_pct": cfg.StallPct, "stall_for": cfg.StallFor.String(), "drop_pct": cfg.DropPct, "drop_every": cfg.DropEvery.String(),
			"body_bytes": cfg.BodyBytes, "lease": cfg.Lease.String(), "max_attempts": cfg.MaxAttempts,
			"ack_delay": cfg.AckDelay.String(), "process_cost": cfg.ProcessCost.String(), "read_ahead": cfg.ReadAhead,
			"audit_every": cfg.AuditEvery.String(),
			"max_pending": cfg.MaxPending, "grace": cfg.Grace.String(),
			"mix": cfg.Mix, "meta_pct": cfg.MetaPct, "typing_rate": cfg.TypingRate,
			"poison_pct": cfg.PoisonPct, "poison_rate": cfg.PoisonRate, "poison_mix": cfg.PoisonMix,
			"typing_flood_pct": cfg.TypingFloodPct, "typing_flood_rate": cfg.TypingFloodRate,
			"webhook_receivers": cfg.WebhookReceivers,
		},
		Clients: len(p.users), Chats: len(p.chats), TargetRate: cfg.Rate,
		Sent: rec.sent.Load(), Accepted: rc.Accepted, SkippedTurns: fl.skipped.Load() + run.backlogDropped,
		UnknownOutcome: rec.unknown.Load(), Rejects: rec.rejectCounts(),
		ExpectedDeliveries: rc.ExpectedDeliveries, MsgFrames: st.MsgFrames, DuplicateFrames: st.DuplicateFrames,
		DeliveredLive: rec.live.Load(), DeliveredHistory: rec.history.Load(), Resends: st.Resends,
		Lost: rc.Lost, MissingPairs: rc.Missing, LostExamples: rc.Examples,
		DuplicatesToApp: rec.dupApp.Load(), Mismatched: rec.mismatch.Load(), Foreign: rec.foreign.Load(),
		DeliveryDrainS: deliveryDrain.Seconds(),
		Reconnects:     max(st.Connects-int64(len(p.users)), 0), Disconnects: closeCodes(st.Disconnects),
		Stalls: fl.stallsBegun.Load(), Drops: fl.drops.Load(), DialFailures: st.DialFailures,
		SendToAccepted: rec.acceptLat.summary(), SendToDelivered: rec.deliverLat.summary(),
		SendToHandedOut: rec.handLat.summary(),
		ProcSource:      mon.proc.source(),
	}
	for _, lc := range fl.clients {
		if lc.stalls {
			r.StallingClients++
		}
		if lc.proxy != nil {
			r.DroppingClients++
		}
	}
	if cfg.Duration > 0 {
		r.AcceptedRate = float64(rec.acceptedMeasured.Load()) / cfg.Duration.Seconds()
	}
	if rc.ExpectedDeliveries > 0 {
		r.DeliveriesPerAccepted = float64(st.MsgFrames) / float64(rc.ExpectedDeliveries)
	}
	mon.mu.Lock()
	r.OutboxPeakPG, r.OutboxPeakStream, r.PeakRSS = mon.peakPG, mon.peakStream, mon.peakRSS
	r.Timeline = mon.samples
	if mon.procErr != nil {
		r.ProcNote = "some samples failed: " + mon.procErr.Error()
	}
	if mon.outboxErr != nil {
		r.OutboxNote = "some polls failed: " + mon.outboxErr.Error()
	}
	mon.mu.Unlock()
	if d, ok := mon.outboxDrain(); ok {
		r.OutboxDrained, r.OutboxDrainS = true, d.Seconds()
	}
	r.CPUSeconds = run.cpuStop - run.cpuStart
	if run.elapsed > 0 {
		r.CPUCores = r.CPUSeconds / run.elapsed.Seconds()
	}
	r.CPUPerMessage = perMessage(run.marksStart, run.marksStop, r.CPUSeconds)
	if t.embedded {
		r.ProcNote = fmt.Sprintf("%s embedded mode: these numbers include the load generator's own cost; target a separate chatd (--url, --pid) for chatd alone", r.ProcNote)
	}
	// A load that got nothing accepted proves nothing: it fails too.
	r.Pass = r.Lost == 0 && r.DuplicatesToApp == 0 && r.Mismatched == 0 && (cfg.Rate == 0 || r.Accepted > 0)
	return r
}
