// Package reexec executes chatd again in its own process, once, before
// anything has started, when Go's runtime must begin with something it
// takes only at its start:
//   - a timer slack (internal/timerslack): a thread inherits its slack
//     from the thread that created it, the runtime's monitor thread
//     (sysmon) is created before any of chatd's code runs, and execve keeps
//     the calling thread's slack for the new runtime's threads;
//   - the monitor polling (Settings.PollingMonitor), a GODEBUG setting,
//     which the runtime reads when it starts.
//
// execve keeps the process, its id and its open files, so a supervisor
// (systemd, a container runtime, a test) sees one process throughout.
package reexec

import "time"

// Settings are what the runtime should start with.
type Settings struct {
	// TimerSlack is every thread's timer slack; 0 keeps the inherited one.
	TimerSlack time.Duration
	// PollingMonitor keeps the runtime's monitor thread from its deep
	// sleep (MonitorGODEBUG), unless GODEBUG already names schedtrace.
	PollingMonitor bool
}

// MonitorGODEBUG keeps Go's monitor thread polling every 10 ms at most
// while chatd idles, instead of its deep sleep. Go has no setting for
// that sleep itself: the monitor skips it only while a scheduler trace is
// due (runtime/proc.go, sysmon), so the trace's interval is the longest
// there is, 2^31-1 ms, and the runtime writes a trace line (starting
// "SCHED") to stderr only when the machine has been up that long, about
// 24.8 days, at chatd's start and every 24.8 days after (and, on a fatal
// error, the scheduler's state before the stack trace). Why the deep
// sleep costs: the first system call after it wakes the monitor, which
// then checks every 20 µs until it finds the process idle again, so a
// process that idles and wakes thousands of times a second (a cluster
// node at a few thousand messages a second) pays a wake-up and several
// sleeps each time (docs/benchmarks-log.md, "The monitor thread's deep
// sleep").
const MonitorGODEBUG = "schedtrace=2147483647"

// marker is set in the environment of the execution Apply starts, so that
// it does not start another. Its value is the process id, a colon, and
// the GODEBUG the process was started with ("-" for none) when Apply added
// MonitorGODEBUG, which the new execution puts back so that the processes
// chatd starts do not inherit the setting. execve keeps the process id, so
// a marker with another one (copied from a running chatd's environment,
// or set by hand) is not this process's own and is dropped.
const marker = "CHATD_REEXEC"

// noGODEBUG is marker's value for a start without GODEBUG.
const noGODEBUG = "-"
