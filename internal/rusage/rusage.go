// Package rusage reads this process's CPU time, the measure chatload prints
// per accepted message and the hot-path benchmarks print per operation.
// Wall time on a shared two-core box says little about cost; the kernel's
// count of user and system time does.
package rusage

import "syscall"

// SelfCPUSeconds is this process's user and system time so far, in seconds.
// It returns 0 if the kernel refuses, which getrusage does not do for
// RUSAGE_SELF.
func SelfCPUSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}
