package main

import (
	"math"
	"sync"
	"time"
)

// Latencies are kept in a fixed-bucket log histogram rather than a sample
// slice: memory stays constant at any rate and duration, and a quantile is
// off by at most half a bucket (about 2.5%), far below what run-to-run noise
// moves a p99.
const (
	histMin    = 10 * time.Microsecond // the first bucket holds everything below
	histGrowth = 1.05
	histBucket = 400 // 10 µs · 1.05^400 ≈ 50 min: nothing real lands past it
)

var histLogGrowth = math.Log(histGrowth)

// histogram counts durations in log-spaced buckets. Safe for concurrent use.
type histogram struct {
	mu     sync.Mutex
	counts [histBucket + 1]int64
	n      int64
	max    time.Duration
}

func bucketOf(d time.Duration) int {
	if d <= histMin {
		return 0
	}
	i := int(math.Log(float64(d)/float64(histMin))/histLogGrowth) + 1
	return min(i, histBucket)
}

// bucketValue is the geometric middle of bucket i: the value a quantile
// falling in it reports.
func bucketValue(i int) time.Duration {
	if i == 0 {
		return histMin
	}
	lo := float64(histMin) * math.Pow(histGrowth, float64(i-1))
	return time.Duration(lo * math.Sqrt(histGrowth))
}

func (h *histogram) record(d time.Duration) {
	i := bucketOf(d)
	h.mu.Lock()
	h.counts[i]++
	h.n++
	h.max = max(h.max, d)
	h.mu.Unlock()
}

// swap returns a copy of h and resets it, so an interval's histogram can be
// read without stopping writers.
func (h *histogram) swap() *histogram {
	out := &histogram{}
	h.mu.Lock()
	out.counts, out.n, out.max = h.counts, h.n, h.max
	h.counts, h.n, h.max = [histBucket + 1]int64{}, 0, 0
	h.mu.Unlock()
	return out
}

// quantile returns the duration below which a fraction q of the samples
// fall; 0 when there are none. The top quantile never exceeds the maximum
// seen.
func (h *histogram) quantile(q float64) time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.n == 0 {
		return 0
	}
	rank := int64(math.Ceil(q * float64(h.n)))
	var seen int64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			return min(bucketValue(i), h.max)
		}
	}
	return h.max
}

// Quantiles is a latency summary in milliseconds.
type Quantiles struct {
	Count int64   `json:"count"`
	P50   float64 `json:"p50_ms"`
	P99   float64 `json:"p99_ms"`
	P999  float64 `json:"p999_ms"`
	Max   float64 `json:"max_ms"`
}

func (h *histogram) summary() Quantiles {
	q := Quantiles{
		P50:  ms(h.quantile(0.50)),
		P99:  ms(h.quantile(0.99)),
		P999: ms(h.quantile(0.999)),
	}
	h.mu.Lock()
	q.Count, q.Max = h.n, ms(h.max)
	h.mu.Unlock()
	return q
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
