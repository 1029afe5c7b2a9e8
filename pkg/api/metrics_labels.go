package api

import (
	"github.com/chatd/chatd/pkg/wire"
	"github.com/prometheus/client_golang/prometheus"
)

// labelledCounter is a one-label CounterVec whose children for the labels a
// hot path uses are looked up once, at start. Every client frame and every
// written frame counts itself: WithLabelValues hashes the label and takes the
// vector's lock each time (a visible share of chatd's CPU when every frame
// does it: docs/benchmarks-log.md, "The relay's reply
// subjects, per-frame counters, plain-ASCII escaping (2026-12-03, 10:36–12:12
// UTC)"), a read of this map does neither. Any other label still goes through
// the vector, so nothing is miscounted.
type labelledCounter struct {
	vec   *prometheus.CounterVec
	known map[string]prometheus.Counter // never written after newLabelledCounter
}

func newLabelledCounter(vec *prometheus.CounterVec, labels ...string) labelledCounter {
	known := make(map[string]prometheus.Counter, len(labels))
	for _, l := range labels {
		known[l] = vec.WithLabelValues(l)
	}
	return labelledCounter{vec: vec, known: known}
}

// inc adds one to label's counter.
func (c labelledCounter) inc(label string) {
	if k, ok := c.known[label]; ok {
		k.Inc()
		return
	}
	c.vec.WithLabelValues(label).Inc()
}

// frameLabels is types as label strings.
func frameLabels(types ...wire.FrameType) []string {
	out := make([]string, 0, len(types))
	for _, t := range types {
		out = append(out, string(t))
	}
	return out
}
