package forward

import (
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Batches is chatd_forward_batches_total{path} of f.
func (f *Forwarder) Batches(path string) float64 {
	c := map[string]prometheus.Counter{"leading": f.leadingN, "forwarded": f.forwardedN, "fallback": f.fallbackN, "taken": f.takenN}[path]
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		panic(err)
	}
	return m.GetCounter().GetValue()
}
