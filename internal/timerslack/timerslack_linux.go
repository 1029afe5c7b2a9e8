package timerslack

import (
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// Current is the calling thread's timer slack.
func Current() (time.Duration, error) {
	ns, err := unix.PrctlRetInt(unix.PR_GET_TIMERSLACK, 0, 0, 0, 0)
	if err != nil {
		return 0, fmt.Errorf("read the timer slack: %w", err)
	}
	return time.Duration(ns), nil
}

// Set makes d the calling thread's timer slack; the threads it creates
// inherit it.
func Set(d time.Duration) error {
	if err := unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(d.Nanoseconds()), 0, 0, 0); err != nil {
		return fmt.Errorf("set the timer slack: %w", err)
	}
	return nil
}
