// Package gcfloor keeps Go's garbage collector from running while the heap
// is small. chatd's live heap is a few MiB at thousands of messages a
// second, so with GOGC=100 the collector starts every few MiB allocated, and
// each cycle also scans the stack of every connection's reader: at
// 4,000 msg/s that was a tenth of chatd's CPU (docs/benchmarks-log.md, "A
// floor under the GC's heap goal"). Go has a ceiling (GOMEMLIMIT) but no
// floor, so the floor raises GOGC (to 1000 at most) while the live heap is
// under half of it, and gives GOGC=100 back once the live heap needs no
// help. A GOMEMLIMIT below the floor still wins: the collector runs when
// the limit is near.
package gcfloor

import (
	"context"
	"math"
	"runtime"
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

// maxPercent bounds the raised GOGC: a live heap that jumps (600 clients
// connecting at once) is met by a goal at most this many times it until
// the next update lowers it.
const maxPercent = 1000

// checkEvery is how often the live heap is read besides after every
// collection, in case a cleanup comes late; setting GOGC neither stops the
// world nor starts a cycle.
const checkEvery = time.Second

const liveMetric = "/gc/heap/live:bytes"

// Percent is the GOGC that makes the heap goal (live × (1 + GOGC/100)) at
// least floor, never less than Go's default nor more than maxPercent.
func Percent(live, floor uint64) int {
	if live == 0 || floor <= live {
		return basePercent
	}
	p := math.Ceil(float64(floor)/float64(live)*100 - 100)
	return int(min(max(p, basePercent), maxPercent))
}

// Run keeps the heap goal at least floor bytes until ctx ends, then gives
// back the GOGC it found. A floor of 0 returns at once.
func Run(ctx context.Context, floor uint64) { run(ctx, floor, checkEvery) }

// run updates GOGC after every collection, from the live heap it
// measured, and every interval.
func run(ctx context.Context, floor uint64, every time.Duration) {
	if floor == 0 {
		return
	}
	found := debug.SetGCPercent(basePercent)
	defer debug.SetGCPercent(found)
	collected := make(chan struct{}, 1)
	stop := make(chan struct{})
	defer close(stop)
	signalEachGC(collected, stop)
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
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-collected:
			apply()
		case <-t.C:
			apply()
		}
	}
}

// marker is an object nothing keeps: the collection after it is made
// runs its cleanup. Large enough not to share a tiny-allocator block,
// whose objects are freed together.
type marker struct{ _ [32]byte }

// signalEachGC sends on ch (without blocking) after each collection until
// stop is closed: each marker's cleanup signals and makes the next one.
func signalEachGC(ch chan<- struct{}, stop <-chan struct{}) {
	var arm func()
	arm = func() {
		runtime.AddCleanup(new(marker), func(struct{}) {
			select {
			case <-stop:
				return
			default:
			}
			select {
			case ch <- struct{}{}:
			default:
			}
			arm()
		}, struct{}{})
	}
	arm()
}
