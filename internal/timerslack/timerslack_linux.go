package timerslack

import (
	"fmt"
	"os"
	"runtime"
	"syscall"
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

// Apply makes want the timer slack of every thread of this process by
// setting it and executing the program again (/proc/self/exe, with the
// same arguments and environment), so it must be called before anything
// worth keeping has started. It returns nil without executing when want
// is 0, when the slack is already want, or in the execution it started
// itself; it returns an error when it could not read or set the slack or
// execute, and the process goes on with the slack it had. Once it has
// executed, it does not return.
func Apply(want time.Duration) error {
	if _, again := os.LookupEnv(marker); again {
		return os.Unsetenv(marker)
	}
	if want <= 0 {
		return nil
	}
	if cur, err := Current(); err != nil || cur == want {
		return err
	}
	if err := os.Setenv(marker, "1"); err != nil {
		return err
	}
	// The slack is the calling thread's, and execve keeps only that thread.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(want.Nanoseconds()), 0, 0, 0); err != nil {
		_ = os.Unsetenv(marker)
		return fmt.Errorf("set the timer slack: %w", err)
	}
	err := syscall.Exec("/proc/self/exe", os.Args, os.Environ())
	_ = os.Unsetenv(marker)
	return fmt.Errorf("execute chatd again with the timer slack: %w", err)
}
