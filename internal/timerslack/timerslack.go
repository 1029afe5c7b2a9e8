// Package timerslack lets chatd's timers fire late by a bounded amount, so
// the kernel can merge their wake-ups. While any goroutine runs, Go's
// runtime monitor thread (sysmon) sleeps 20 µs at a time between its checks.
// On the 2-core VM of BENCHMARKS.md each of those sleeps cost about 11 µs of
// CPU, and that thread took a fifth of chatd's CPU, unseen by pprof
// (docs/benchmarks-log.md, "The runtime's monitor thread, and timer slack").
// Linux's timer slack (prctl PR_SET_TIMERSLACK) lets every such sleep of a
// thread run up to that much longer, and a thread takes its slack from the
// thread that created it. The monitor thread is created before any of
// chatd's code runs, so the only way to give it a slack is to set it and
// then execute chatd again in the same process (internal/reexec): execve
// keeps the calling thread's slack, and the new runtime's threads inherit
// it.
package timerslack

import "time"

// DefaultSlack is chatd's --timer-slack default: with it, pairs at
// 2,000 msg/s on one node cost 13% less chatd CPU a message, and a lone
// message's p99 at 20 msg/s rises by about a millisecond.
const DefaultSlack = time.Millisecond
