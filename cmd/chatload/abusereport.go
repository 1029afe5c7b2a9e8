package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// badStats is what the bad clients did and were told. Safe for concurrent use.
type badStats struct {
	poisonSent                         [numPoison]atomic.Int64
	typingSent, connects, dialFailures atomic.Int64

	mu            sync.Mutex
	poisonAnswers map[string]map[string]int64 // poison kind → "accepted" or "rejected <code>"
	typingAnswers map[string]int64            // "rejected <code>"
	closes        map[int]int64               // by close code, 0 when none came
}

func newBadStats() *badStats {
	return &badStats{poisonAnswers: make(map[string]map[string]int64), typingAnswers: make(map[string]int64), closes: make(map[int]int64)}
}

// answer counts an `accepted` or `rejected` frame sent to a bad client of
// role. A poison send's cid names its kind; an answer without a cid (the
// server could not read one) counts under "no cid". A flooder sends only
// typing, so every answer it gets is about typing.
func (s *badStats) answer(role uint8, f badFrame) {
	var outcome string
	switch f.Type {
	case "accepted":
		outcome = "accepted"
	case "rejected":
		outcome = "rejected " + f.Code
	default:
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if role == roleFlood {
		s.typingAnswers[outcome]++
		return
	}
	kind := poisonKindOf(f.CID)
	m := s.poisonAnswers[kind]
	if m == nil {
		m = make(map[string]int64)
		s.poisonAnswers[kind] = m
	}
	m[outcome]++
}

// poisonKindOf reads the kind from a poison cid, "<run>-<kind>-<client>-<session>-<n>".
func poisonKindOf(cid string) string {
	parts := strings.Split(cid, "-")
	if len(parts) == 5 {
		for k := range numPoison {
			if parts[1] == poisonName(k) {
				return parts[1]
			}
		}
	}
	return "no cid"
}

func (s *badStats) closed(code int) {
	s.mu.Lock()
	s.closes[code]++
	s.mu.Unlock()
}

// BadReport is the bad clients' part of a report, and the one figure of the
// good clients that their presence turns into a verdict.
type BadReport struct {
	PoisonClients int     `json:"poison_clients"`
	FloodClients  int     `json:"typing_flood_clients"`
	PoisonRate    float64 `json:"poison_rate_per_client"`
	PoisonMix     string  `json:"poison_mix"`
	FloodRate     float64 `json:"typing_flood_rate_per_client"` // 0: unpaced

	PoisonSent    map[string]int64            `json:"poison_sent"`
	PoisonAnswers map[string]map[string]int64 `json:"poison_answers"`
	TypingSent    int64                       `json:"typing_sent"`
	TypingAnswers map[string]int64            `json:"typing_answers"`
	Connects      int64                       `json:"connects"`
	DialFailures  int64                       `json:"dial_failures"`
	Closes        map[string]int64            `json:"closes_by_code"`

	// GoodRefused is every good send answered `rejected`, for any reason;
	// GoodOverloaded those answered `overloaded`. Either fails the run.
	GoodRefused    int64 `json:"good_refused"`
	GoodOverloaded int64 `json:"good_overloaded"`
}

// buildBad summarises the bad clients and judges the good clients' refusals.
func buildBad(cfg *Config, s *badStats, goodRejects map[string]int64) *BadReport {
	r := &BadReport{
		PoisonClients: cfg.poisonClients, FloodClients: cfg.floodClients,
		PoisonRate: cfg.PoisonRate, PoisonMix: cfg.PoisonMix, FloodRate: cfg.TypingFloodRate,
		PoisonSent: map[string]int64{}, PoisonAnswers: map[string]map[string]int64{},
		TypingSent: s.typingSent.Load(), Connects: s.connects.Load(), DialFailures: s.dialFailures.Load(),
		GoodOverloaded: goodRejects["overloaded"],
	}
	for k := range numPoison {
		r.PoisonSent[poisonName(k)] = s.poisonSent[k].Load()
	}
	for _, n := range goodRejects {
		r.GoodRefused += n
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, m := range s.poisonAnswers {
		r.PoisonAnswers[k] = maps.Clone(m)
	}
	r.TypingAnswers = maps.Clone(s.typingAnswers)
	r.Closes = closeCodes(s.closes)
	return r
}

// Pass reports whether no good send was refused.
func (r *BadReport) Pass() bool { return r.GoodRefused == 0 }

func (r *BadReport) writeText(p func(string, ...any)) {
	verdict := "ok: no good send refused"
	if !r.Pass() {
		verdict = fmt.Sprintf("FAIL: %d good sends refused, %d of them overloaded", r.GoodRefused, r.GoodOverloaded)
	}
	p("isolation         %s", verdict)
	flood := "as fast as chatd reads"
	if r.FloodRate > 0 {
		flood = fmt.Sprintf("%.0f/s each", r.FloodRate)
	}
	p("bad clients       %d poison (%.0f/s each, %s), %d typing flood (%s); connects %d, dial failures %d",
		r.PoisonClients, r.PoisonRate, r.PoisonMix, r.FloodClients, flood, r.Connects, r.DialFailures)
	p("  closed by code  %s", fmtMap(r.Closes))
	p("  poison sent     %s", fmtMap(r.PoisonSent))
	for _, k := range slices.Sorted(maps.Keys(r.PoisonAnswers)) {
		p("  answers %-8s %s", k, fmtMap(r.PoisonAnswers[k]))
	}
	p("  typing sent     %d; answers %s", r.TypingSent, fmtMap(r.TypingAnswers))
}

// baselineFactor is the default of Config.BaselineFactor: how far the good
// clients' live p99 may rise over the same run's without bad clients
// before the bad ones count as harming them.
const baselineFactor = 2

// BaselineCheck compares the good clients' live p99 with a baseline run's.
type BaselineCheck struct {
	Path          string  `json:"path"`
	BaselineP99MS float64 `json:"baseline_p99_ms"`
	P99MS         float64 `json:"p99_ms"`
	Ratio         float64 `json:"ratio"`
	Limit         float64 `json:"limit"`
	OK            bool    `json:"ok"`
}

// loadBaseline reads the live p99 of an earlier run's JSON report.
func loadBaseline(path string) (float64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("baseline: %w", err)
	}
	var r Report
	if err := json.Unmarshal(b, &r); err != nil {
		return 0, fmt.Errorf("baseline %s: %w", path, err)
	}
	if r.SendToDelivered.Count == 0 || r.SendToDelivered.P99 <= 0 {
		return 0, fmt.Errorf("baseline %s: no live deliveries to compare with", path)
	}
	return r.SendToDelivered.P99, nil
}

// checkBaseline judges p99 against the baseline's.
func checkBaseline(path string, baseP99, p99, limit float64) *BaselineCheck {
	c := &BaselineCheck{Path: path, BaselineP99MS: baseP99, P99MS: p99, Limit: limit}
	if baseP99 > 0 {
		c.Ratio = p99 / baseP99
	}
	c.OK = p99 > 0 && c.Ratio <= limit
	return c
}

func (c *BaselineCheck) writeText(p func(string, ...any)) {
	verdict := "ok"
	if !c.OK {
		verdict = "FAIL"
	}
	p("vs baseline       %s: live p99 %.2f ms is %.2f× the baseline's %.2f ms (limit %g×, %s)",
		verdict, c.P99MS, c.Ratio, c.BaselineP99MS, c.Limit, c.Path)
}
