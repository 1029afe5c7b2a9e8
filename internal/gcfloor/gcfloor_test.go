package gcfloor

import (
	"context"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"
)

func TestPercent(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		live, floor uint64
		want        int
	}{
		{live: 8 * mib, floor: 64 * mib, want: 700},  // goal 8 × 8 = 64 MiB
		{live: 10 * mib, floor: 64 * mib, want: 540}, // 10 × 6.4, rounded up
		{live: 32 * mib, floor: 64 * mib, want: 100}, // the default already reaches it
		{live: 40 * mib, floor: 64 * mib, want: 100}, // never below the default
		{live: 200 * mib, floor: 64 * mib, want: 100},
		{live: 0, floor: 64 * mib, want: 100},    // nothing measured yet
		{live: mib, floor: 64 * mib, want: 1000}, // at most maxPercent
	} {
		if got := Percent(c.live, c.floor); got != c.want {
			t.Errorf("Percent(%d MiB, %d MiB) = %d, want %d", c.live/mib, c.floor/mib, got, c.want)
		}
	}
}

func gogc() uint64 {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

func cycles() uint64 {
	s := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// churn allocates n bytes of short-lived garbage, keeping almost none of
// it, and returns how many collections ran meanwhile.
func churn(n int) uint64 {
	before := cycles()
	keep := make([][]byte, 4)
	for i := 0; i < n/(64<<10); i++ {
		keep[i%len(keep)] = make([]byte, 64<<10)
	}
	runtime.KeepAlive(keep)
	return cycles() - before
}

// With a floor far above this test's live heap, allocating half the floor
// in garbage runs a fraction of the collections GOGC=100 runs; when
// Run ends, GOGC is what it was.
func TestFloorSparesCollections(t *testing.T) {
	found := debug.SetGCPercent(100)
	defer debug.SetGCPercent(found)
	runtime.GC()
	without := churn(128 << 20)

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		Run(ctx, 256<<20)
	}()
	deadline := time.Now().Add(5 * time.Second)
	for gogc() <= 100 {
		if time.Now().After(deadline) {
			t.Fatal("GOGC still 100 five seconds after Run started with a 256 MiB floor")
		}
		time.Sleep(time.Millisecond)
	}
	runtime.GC() // start from an empty heap, as the run without did
	with := churn(128 << 20)
	cancel()
	<-done

	t.Logf("collections while allocating 128 MiB: %d at GOGC=100, %d with a 256 MiB floor", without, with)
	if without < 10 {
		t.Fatalf("only %d collections at GOGC=100: the test's heap is not small enough to tell", without)
	}
	if with*4 > without {
		t.Fatalf("%d collections with a 256 MiB floor against %d without, want a quarter or fewer", with, without)
	}
	if got := gogc(); got != 100 {
		t.Fatalf("GOGC %d after Run ended, want the 100 it found", got)
	}
}

// A floor of 0 leaves GOGC alone.
func TestZeroFloorIsOff(t *testing.T) {
	found := debug.SetGCPercent(150)
	defer debug.SetGCPercent(found)
	Run(context.Background(), 0) // returns at once
	if got := gogc(); got != 150 {
		t.Fatalf("GOGC %d after Run with floor 0, want 150 untouched", got)
	}
}

// GOGC follows the live heap after each collection, not only on the timer
// (here an hour): a heap that grows past half the floor gets Go's default
// back at its next collection, before a raised GOGC lets it balloon.
func TestFollowsEachCollection(t *testing.T) {
	found := debug.SetGCPercent(100)
	defer debug.SetGCPercent(found)
	runtime.GC()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	defer func() { cancel(); <-done }()
	go func() {
		defer close(done)
		run(ctx, 64<<20, time.Hour)
	}()
	waitGOGC(t, func(p uint64) bool { return p > 100 }, "raised above 100 under a 64 MiB floor")

	live := make([]byte, 48<<20) // over half the floor
	for i := range live {
		live[i] = 1
	}
	runtime.GC()
	waitGOGC(t, func(p uint64) bool { return p == 100 }, "back to 100 after a collection measured 48 MiB live")
	runtime.KeepAlive(live)
}

func waitGOGC(t *testing.T, ok func(uint64) bool, want string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ok(gogc()) {
		if time.Now().After(deadline) {
			t.Fatalf("GOGC %d after 10 s, want it %s", gogc(), want)
		}
		time.Sleep(time.Millisecond)
	}
}
