package main

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Sample is one second of the run, for the charts.
type Sample struct {
	T                     float64 `json:"t"` // seconds since the load started
	Phase                 string  `json:"phase"`
	AcceptedPerSec        float64 `json:"accepted_per_s"`
	DeliveredPerSec       float64 `json:"delivered_per_s"`
	DeliveriesPerAccepted float64 `json:"deliveries_per_accepted"` // cumulative
	Outstanding           int64   `json:"outstanding"`
	Reconnects            int64   `json:"reconnects"`
	Rejects               int64   `json:"rejects"`
	OutboxPostgres        int64   `json:"outbox_postgres"`
	StreamBacklog         uint64  `json:"stream_backlog"`
	StreamMsgs            uint64  `json:"stream_msgs"`
	Pins                  int     `json:"pins"`
	AcceptP50             float64 `json:"accept_p50_ms"`
	AcceptP99             float64 `json:"accept_p99_ms"`
	DeliverP50            float64 `json:"deliver_p50_ms"`
	DeliverP99            float64 `json:"deliver_p99_ms"`
	HandedOutP99          float64 `json:"handed_out_p99_ms"` // live or from history
	RSS                   int64   `json:"rss_bytes"`
	CPU                   float64 `json:"cpu_seconds"`
}

// monitor samples the run once a second: the recorder's counters, the
// SDK's, the outbox and the chatd process. It prints the progress line.
type monitor struct {
	cfg    *Config
	rec    *recorder
	fleet  *fleet
	outbox *outboxPoller // nil: not available
	proc   procSampler
	start  time.Time

	mu        sync.Mutex
	phase     string
	stoppedAt time.Time // the load's stop; zero while it runs
	drainedAt time.Time // first drained outbox reading after the stop
	samples   []Sample
	last      Sample

	// Totals at the previous sample; only the sampling goroutine uses them.
	prevAccepted, prevReceived int64
	peakRSS                    int64
	peakPG                     int64
	peakStream                 uint64
	outboxErr                  error
	procErr                    error
	drained                    chan struct{} // closed at drainedAt
}

func newMonitor(cfg *Config, rec *recorder, f *fleet, ob *outboxPoller, proc procSampler, start time.Time) *monitor {
	return &monitor{cfg: cfg, rec: rec, fleet: f, outbox: ob, proc: proc, start: start, phase: "setup", drained: make(chan struct{})}
}

func (m *monitor) setPhase(p string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.phase = p
	if p == "drain" {
		m.stoppedAt = time.Now()
	}
}

// run samples until ctx ends.
func (m *monitor) run(ctx context.Context) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	lastPrint := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		s := m.sample(ctx)
		if m.cfg.Progress > 0 && time.Since(lastPrint) >= m.cfg.Progress-50*time.Millisecond {
			lastPrint = time.Now()
			fmt.Fprintln(m.cfg.Out, progressLine(s))
		}
	}
}

func (m *monitor) sample(ctx context.Context) Sample {
	now := time.Now()
	st := m.fleet.stats()
	acc, dlv, hand := m.rec.acceptIv.swap(), m.rec.deliverIv.swap(), m.rec.handIv.swap()
	m.mu.Lock()
	prev, phase := m.last, m.phase
	m.mu.Unlock()
	s := Sample{
		T:          now.Sub(m.start).Seconds(),
		Phase:      phase,
		Reconnects: max(st.Connects-int64(len(m.fleet.clients)), 0),
		AcceptP50:  ms(acc.quantile(0.5)), AcceptP99: ms(acc.quantile(0.99)),
		DeliverP50: ms(dlv.quantile(0.5)), DeliverP99: ms(dlv.quantile(0.99)),
		HandedOutP99: ms(hand.quantile(0.99)),
	}
	for _, v := range st.Rejects {
		s.Rejects += v
	}
	accepted, received, expected := m.rec.accepted.Load(), m.rec.received.Load(), m.rec.expected.Load()
	if dt := s.T - prev.T; dt > 0 {
		s.AcceptedPerSec = float64(accepted-m.prevAccepted) / dt
		s.DeliveredPerSec = float64(received-m.prevReceived) / dt
	}
	m.prevAccepted, m.prevReceived = accepted, received
	if expected > 0 {
		s.DeliveriesPerAccepted = float64(st.MsgFrames) / float64(expected)
	}
	s.Outstanding = max(expected-received, 0)
	m.sampleOutbox(ctx, &s)
	m.sampleProc(ctx, &s)

	m.mu.Lock()
	defer m.mu.Unlock()
	m.samples = append(m.samples, s)
	m.last = s
	return s
}

func (m *monitor) sampleOutbox(ctx context.Context, s *Sample) {
	if m.outbox == nil {
		return
	}
	pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	ob, err := m.outbox.poll(pctx)
	m.mu.Lock()
	defer m.mu.Unlock()
	if err != nil {
		if ctx.Err() == nil { // not the monitor being stopped mid-poll
			m.outboxErr = err
		}
		return
	}
	s.OutboxPostgres, s.StreamBacklog, s.StreamMsgs, s.Pins = ob.PostgresDepth, ob.StreamBacklog, ob.StreamMsgs, ob.Pins
	m.peakPG = max(m.peakPG, ob.PostgresDepth)
	m.peakStream = max(m.peakStream, ob.StreamBacklog)
	if !m.stoppedAt.IsZero() && m.drainedAt.IsZero() && ob.drained() {
		m.drainedAt = time.Now()
		close(m.drained)
	}
}

func (m *monitor) sampleProc(ctx context.Context, s *Sample) {
	rss, cpu, err := m.proc.sample(ctx)
	m.mu.Lock()
	defer m.mu.Unlock()
	if err != nil {
		if ctx.Err() == nil { // not the monitor being stopped mid-scrape
			m.procErr = err
		}
		return
	}
	s.RSS, s.CPU = rss, cpu
	m.peakRSS = max(m.peakRSS, rss)
}

// outboxDrain returns how long after the load's stop the outbox drained,
// or false if it has not (or cannot be observed).
func (m *monitor) outboxDrain() (time.Duration, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.drainedAt.IsZero() {
		return 0, false
	}
	return m.drainedAt.Sub(m.stoppedAt), true
}

func progressLine(s Sample) string {
	line := fmt.Sprintf("%6.0fs %-6s accepted %7.0f/s delivered %7.0f/s deliveries/accepted %.3f outstanding %d reconnects %d rejects %d",
		s.T, s.Phase, s.AcceptedPerSec, s.DeliveredPerSec, s.DeliveriesPerAccepted, s.Outstanding, s.Reconnects, s.Rejects)
	line += fmt.Sprintf(" outbox pg=%d stream=%d pins=%d", s.OutboxPostgres, s.StreamBacklog, s.Pins)
	if s.RSS > 0 {
		line += fmt.Sprintf(" rss %s", mib(s.RSS))
	}
	return line
}

func mib(b int64) string { return fmt.Sprintf("%.0fMiB", float64(b)/(1<<20)) }
