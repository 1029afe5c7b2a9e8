package testmetric_test

import (
	"testing"

	"github.com/chatd/chatd/internal/testmetric"
	"github.com/prometheus/client_golang/prometheus"
)

func TestSumAndValue(t *testing.T) {
	reg := prometheus.NewRegistry()
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "c_total", Help: "h"}, []string{"path", "kind"})
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "g", Help: "h"})
	reg.MustRegister(c, g)
	if got := testmetric.Sum(t, reg, "c_total"); got != 0 {
		t.Fatalf("an unused vector sums to %v, want 0", got)
	}
	c.WithLabelValues("a", "x").Add(2)
	c.WithLabelValues("a", "y").Add(3)
	c.WithLabelValues("b", "x").Add(5)
	g.Set(7)
	for _, tt := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"c_total", nil, 10},
		{"c_total", []string{"path", "a"}, 5},
		{"c_total", []string{"path", "a", "kind", "x"}, 2},
		{"c_total", []string{"path", "c"}, 0},
		{"g", nil, 7},
	} {
		if got := testmetric.Sum(t, reg, tt.name, tt.labels...); got != tt.want {
			t.Errorf("Sum(%s%v) = %v, want %v", tt.name, tt.labels, got, tt.want)
		}
	}
	if got := testmetric.Value(t, reg, "c_total", "path", "b"); got != 5 {
		t.Errorf("Value(c_total{path=b}) = %v, want 5", got)
	}
}
