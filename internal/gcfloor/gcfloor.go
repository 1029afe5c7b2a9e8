// Package gcfloor keeps Go's garbage collector from running while the heap
// is small. chatd's live heap is a few MiB at thousands of messages a
// second, so with GOGC=100 the collector starts every few MiB allocated, and
// each cycle also scans the stack of every connection's reader: at
// 4,000 msg/s that was a tenth of chatd's CPU (docs/benchmarks-log.md, "A
// floor under the GC's heap goal"). Go has a ceiling (GOMEMLIMIT) but no
// floor, so the floor raises GOGC while the live heap is under half of it,
// and gives GOGC=100 back once the live heap needs no help. A GOMEMLIMIT
// below the floor still wins: the collector runs when the limit is near.
package gcfloor

import (
	"context"
	"math"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// DefaultFloor is chatd's --heap-floor-bytes default: a few times the live
// heap of the pairs load, far under that of 10,000 group members, whose
// collections it leaves as they were.
const DefaultFloor = 64 << 20

// basePercent is Go's default GOGC, which applies above the floor.
const basePercent = 100

// checkEvery is how often the live heap is read; it moves slowly, and
// setting GOGC neither stops the world nor starts a cycle.
const checkEvery = 250 * time.Millisecond

const liveMetric = "/gc/heap/live:bytes"

// Percent is the GOGC that makes the heap goal (live × (1 + GOGC/100)) at
// least floor, and never less than Go's default.
func Percent(live, floor uint64) int {
	if live == 0 || floor <= live {
		return basePercent
	}
	p := float64(floor)/float64(live)*100 - 100
	if p <= basePercent {
		return basePercent
	}
	return int(math.Min(math.Ceil(p), math.MaxInt32))
}

// Run keeps the heap goal at least floor bytes until ctx ends, then gives
// back the GOGC it found. A floor of 0 returns at once.
func Run(ctx context.Context, floor uint64) {
	if floor == 0 {
		return
	}
	found := debug.SetGCPercent(basePercent)
	defer debug.SetGCPercent(found)
	sample := []metrics.Sample{{Name: liveMetric}}
	set := basePercent
	apply := func() {
		metrics.Read(sample)
		if sample[0].Value.Kind() != metrics.KindUint64 {
			return
		}
		if p := Percent(sample[0].Value.Uint64(), floor); p != set {
			debug.SetGCPercent(p)
			set = p
		}
	}
	apply()
	t := time.NewTicker(checkEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			apply()
		}
	}
}
