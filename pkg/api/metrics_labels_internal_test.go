package api

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// A pre-looked-up label and one outside the list both count on the
// vector's own children, so /metrics shows the same figures either way.
func TestLabelledCounterCountsKnownAndOtherLabels(t *testing.T) {
	vec := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "t_total", Help: "t"}, []string{"type"})
	c := newLabelledCounter(vec, "send", "ack")
	c.inc("send")
	c.inc("send")
	c.inc("ack")
	c.inc("something_else")
	for label, want := range map[string]float64{"send": 2, "ack": 1, "something_else": 1} {
		if got := counterValue(t, vec.WithLabelValues(label)); got != want {
			t.Errorf("%s: got %v, want %v", label, got, want)
		}
	}
}
