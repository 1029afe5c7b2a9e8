// Package testmetric reads a metric's value from a Prometheus registry, for
// tests that check what a component counted.
package testmetric

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Sum adds up the counter and gauge values of the series of metric name
// whose labels include the pairs given (label, value, ...). It is 0 when no
// series matches: a vector gathers none before its first use.
func Sum(t testing.TB, g prometheus.Gatherer, name string, labels ...string) float64 {
	t.Helper()
	sum, _ := find(t, g, name, labels)
	return sum
}

// Value is Sum for a metric the test expects to be there: it fails the test
// when no series matches.
func Value(t testing.TB, g prometheus.Gatherer, name string, labels ...string) float64 {
	t.Helper()
	sum, n := find(t, g, name, labels)
	if n == 0 {
		t.Fatalf("metric %s%v is not registered", name, labels)
	}
	return sum
}

func find(t testing.TB, g prometheus.Gatherer, name string, labels []string) (sum float64, series int) {
	t.Helper()
	if len(labels)%2 != 0 {
		t.Fatalf("metric %s: labels %v are not name, value pairs", name, labels)
	}
	mfs, err := g.Gather()
	if err != nil {
		t.Fatalf("gather metrics: %v", err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if has(m, labels) {
				sum += m.GetCounter().GetValue() + m.GetGauge().GetValue()
				series++
			}
		}
	}
	return sum, series
}

// has reports whether m carries every label pair of labels.
func has(m *dto.Metric, labels []string) bool {
	for i := 0; i < len(labels); i += 2 {
		found := false
		for _, l := range m.GetLabel() {
			found = found || (l.GetName() == labels[i] && l.GetValue() == labels[i+1])
		}
		if !found {
			return false
		}
	}
	return true
}
