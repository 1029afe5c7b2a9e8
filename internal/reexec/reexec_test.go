//go:build linux

package reexec

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chatd/chatd/internal/timerslack"
)

// helperEnv makes the test binary, run again by a test, act as a program
// that calls Apply first thing and then reports what it started with. Its
// value is the slack, then "poll" or "go" for the monitor.
const helperEnv = "REEXEC_TEST_HELPER"

func TestMain(m *testing.M) {
	if want, ok := os.LookupEnv(helperEnv); ok {
		os.Exit(helper(want))
	}
	os.Exit(m.Run())
}

// report is what the program prints.
type report struct {
	pid      int
	slacks   []int64 // every thread's, in thread order
	marked   bool    // the marker still in its environment
	godebug  string  // GODEBUG in its environment after Apply
	polls    bool    // MonitorPolls
	switches int     // the monitor thread's sleeps while the program idled
}

// idle is how long the program idles while its monitor thread's sleeps are
// counted: polling, the monitor sleeps at most 10 ms at a time; in its
// deep sleep it wakes only for the program's one timer.
const idle = 500 * time.Millisecond

// helper is the program: Apply, then a report of every thread's slack,
// its environment, and the monitor thread's sleeps while it idles.
func helper(want string) int {
	slack, monitor, _ := strings.Cut(want, ",")
	d, err := time.ParseDuration(slack)
	if err == nil {
		err = Apply(Settings{TimerSlack: d, PollingMonitor: monitor == "poll"})
	}
	if err != nil {
		fmt.Println("apply:", err)
		return 1
	}
	tids, err := threads()
	if err != nil {
		fmt.Println("threads:", err)
		return 1
	}
	var slacks []string
	for _, tid := range tids {
		b, err := os.ReadFile(filepath.Join("/proc", tid, "timerslack_ns"))
		if err != nil {
			fmt.Println("read:", err)
			return 1
		}
		slacks = append(slacks, strings.TrimSpace(string(b)))
	}
	// The runtime creates the monitor thread first, before main runs. The
	// system calls above woke it; it settles before its sleeps are counted.
	time.Sleep(idle / 5)
	slept, err := sleepsWhileIdle(tids[1])
	if err != nil {
		fmt.Println("sleeps:", err)
		return 1
	}
	_, marked := os.LookupEnv(marker)
	fmt.Printf("pid %d slacks %s marker %v monitor %v switches %d godebug %q\n", os.Getpid(), strings.Join(slacks, ","),
		marked, MonitorPolls(), slept, os.Getenv("GODEBUG"))
	return 0
}

// threads are the process's thread ids in the order they were created.
func threads() ([]string, error) {
	tasks, err := filepath.Glob("/proc/self/task/*")
	if err != nil || len(tasks) < 2 {
		return nil, fmt.Errorf("%d threads: %v", len(tasks), err)
	}
	ids := make([]int, len(tasks))
	for i, task := range tasks {
		if ids[i], err = strconv.Atoi(filepath.Base(task)); err != nil {
			return nil, err
		}
	}
	slices.Sort(ids)
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = strconv.Itoa(id)
	}
	return out, nil
}

// sleepsWhileIdle is how many times thread tid slept while the program
// idled for idle.
func sleepsWhileIdle(tid string) (int, error) {
	before, err := sleeps(tid)
	if err != nil {
		return 0, err
	}
	time.Sleep(idle)
	after, err := sleeps(tid)
	return after - before, err
}

// sleeps is a thread's voluntary context switches so far.
func sleeps(tid string) (int, error) {
	b, err := os.ReadFile(filepath.Join("/proc", tid, "status"))
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "voluntary_ctxt_switches:"); ok {
			return strconv.Atoi(strings.TrimSpace(v))
		}
	}
	return 0, fmt.Errorf("no voluntary_ctxt_switches in thread %s's status", tid)
}

// runHelper runs the program with want and the extra environment, and
// returns its report.
func runHelper(t *testing.T, want string, env ...string) report {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), helperEnv+"="+want), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the program with %s: %v\n%s", want, err, out)
	}
	var r report
	var list string
	if _, err := fmt.Sscanf(string(out), "pid %d slacks %s marker %t monitor %t switches %d godebug %q",
		&r.pid, &list, &r.marked, &r.polls, &r.switches, &r.godebug); err != nil {
		t.Fatalf("the program with %s printed %q: %v", want, out, err)
	}
	if r.pid != cmd.Process.Pid {
		t.Fatalf("the program ran as pid %d, started as %d: the execution must stay in the process", r.pid, cmd.Process.Pid)
	}
	if r.marked {
		t.Fatalf("%s is still set after Apply: chatd's child processes would inherit it", marker)
	}
	for _, s := range strings.Split(list, ",") {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		r.slacks = append(r.slacks, n)
	}
	return r
}

// Every thread of the program, the runtime's monitor thread among them,
// has the slack asked for, the execution stays in the same process, and
// the marker does not outlive it (the processes chatd starts must not see
// it).
func TestEveryThreadHasTheSlack(t *testing.T) {
	r := runHelper(t, "3ms,go")
	if len(r.slacks) < 2 {
		t.Fatalf("the program had %d thread(s); the runtime's monitor thread alone makes two", len(r.slacks))
	}
	for i, s := range r.slacks {
		if s != 3_000_000 {
			t.Fatalf("thread %d of %d has a slack of %d ns, want 3000000 (all: %v)", i+1, len(r.slacks), s, r.slacks)
		}
	}
}

// With 0 nothing is set: the threads keep the slack the program was
// started with, as this test's own process has it.
func TestZeroKeepsTheInheritedSlack(t *testing.T) {
	own, err := timerslack.Current()
	if err != nil {
		t.Fatal(err)
	}
	r := runHelper(t, "0s,go")
	for i, s := range r.slacks {
		if time.Duration(s) != own {
			t.Fatalf("thread %d has a slack of %d ns, want the inherited %d", i+1, s, own.Nanoseconds())
		}
	}
}

// With the polling monitor the runtime starts with MonitorGODEBUG, and its
// monitor thread keeps waking while the program idles rather than sleep
// until the program's next timer; GODEBUG is back as it was for the
// processes the program starts. Without it the monitor sleeps through.
func TestMonitorPollsWhileIdle(t *testing.T) {
	t.Setenv("GODEBUG", "")
	polling := runHelper(t, "0s,poll", "GODEBUG=madvdontneed=1")
	if !polling.polls {
		t.Fatalf("the program's runtime did not start with %s", MonitorGODEBUG)
	}
	if polling.godebug != "madvdontneed=1" {
		t.Fatalf("GODEBUG after Apply is %q, want the one the program was started with, madvdontneed=1", polling.godebug)
	}
	// Polling, the monitor sleeps 10 ms at a time at most: about 50 times
	// in the idle half second.
	if polling.switches < 25 {
		t.Fatalf("the polling monitor slept %d times in %v of idling, want 25 or more: it slept deeply", polling.switches, idle)
	}
	deep := runHelper(t, "0s,go")
	t.Logf("the monitor slept %d times polling, %d times without, in %v of idling", polling.switches, deep.switches, idle)
	if deep.polls {
		t.Fatal("the program's runtime started with a scheduler trace due, without the polling monitor")
	}
	if deep.switches >= 25 {
		t.Fatalf("without the polling monitor the monitor slept %d times in %v of idling, want under 25: this test cannot tell the two apart", deep.switches, idle)
	}
}

// A schedtrace set by hand is left as it is, and the program is not
// executed again for the monitor.
func TestSchedtraceSetByHandKept(t *testing.T) {
	r := runHelper(t, "0s,poll", "GODEBUG=schedtrace=0")
	if r.polls || r.godebug != "schedtrace=0" {
		t.Fatalf("with GODEBUG=schedtrace=0 the program's runtime polls %v, GODEBUG %q; want no polling and GODEBUG as it was", r.polls, r.godebug)
	}
}

// A marker that is not the process's own (copied from a running chatd's
// environment, whose /proc/PID/environ keeps it, or set by hand) does not
// stand for an execution already made: the program still starts with its
// settings.
func TestForeignMarkerIgnored(t *testing.T) {
	t.Setenv("GODEBUG", "")
	for _, v := range []string{"-", "1:-", ""} {
		r := runHelper(t, "0s,poll", marker+"="+v)
		if !r.polls || r.godebug != "" {
			t.Fatalf("with %s=%q the program's runtime polls %v, GODEBUG %q; want %s at its start and GODEBUG unset after",
				marker, v, r.polls, r.godebug, MonitorGODEBUG)
		}
	}
}
