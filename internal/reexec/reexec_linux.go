package reexec

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/chatd/chatd/internal/timerslack"
)

// Apply makes the runtime start with s by executing the program again
// (/proc/self/exe, with the same arguments and environment, GODEBUG
// extended), so it must be called before anything worth keeping has
// started. It returns nil without executing when nothing differs from s,
// and in the execution it started itself, where it puts GODEBUG back as
// it was. It returns an error when it could not set the slack or
// execute, and the process goes on as it was started. Once it has
// executed, it does not return.
func Apply(s Settings) error {
	if v, marked := os.LookupEnv(marker); marked {
		if prev, own := markedBy(v, os.Getpid()); own {
			return restore(prev)
		}
		if err := os.Unsetenv(marker); err != nil {
			return err
		}
	}
	godebug := os.Getenv("GODEBUG")
	// A schedtrace set by hand is whoever set it choosing the monitor's behaviour.
	_, traced := lookup(godebug, "schedtrace")
	addMonitor := s.PollingMonitor && !traced
	// The slack is the calling thread's, and execve keeps only that thread.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	slackSet, slackErr := setSlack(s.TimerSlack)
	if !addMonitor && !slackSet {
		return slackErr
	}
	restoreTo := ""
	if addMonitor {
		restoreTo = noGODEBUG
		if godebug != "" {
			restoreTo = godebug
		}
		if err := os.Setenv("GODEBUG", withSetting(godebug, MonitorGODEBUG)); err != nil {
			return err
		}
	}
	if err := os.Setenv(marker, strconv.Itoa(os.Getpid())+":"+restoreTo); err != nil {
		return err
	}
	err := syscall.Exec("/proc/self/exe", os.Args, os.Environ())
	_ = restore(restoreTo)
	if slackErr != nil {
		return fmt.Errorf("%w; execute chatd again: %w", slackErr, err)
	}
	return fmt.Errorf("execute chatd again: %w", err)
}

// setSlack sets the calling thread's timer slack to want, unless want is 0
// or the slack already; it reports whether it set it.
func setSlack(want time.Duration) (bool, error) {
	if want <= 0 {
		return false, nil
	}
	cur, err := timerslack.Current()
	if err != nil || cur == want {
		return false, err
	}
	if err := timerslack.Set(want); err != nil {
		return false, err
	}
	return true, nil
}

// markedBy reads a marker's value: the GODEBUG to put back, and whether
// process pid set it.
func markedBy(value string, pid int) (prev string, own bool) {
	id, prev, ok := strings.Cut(value, ":")
	return prev, ok && id == strconv.Itoa(pid)
}

// restore clears the marker and puts GODEBUG back as the marker's value
// says it was.
func restore(prev string) error {
	if err := os.Unsetenv(marker); err != nil {
		return err
	}
	switch prev {
	case "":
		return nil
	case noGODEBUG:
		return os.Unsetenv("GODEBUG")
	default:
		return os.Setenv("GODEBUG", prev)
	}
}

// MonitorPolls reports whether this process's runtime started with a
// scheduler trace due (MonitorGODEBUG, or schedtrace set by hand): the
// GODEBUG of the environment the process was executed with, which
// /proc/self/environ keeps whatever was set since.
func MonitorPolls() bool {
	env, err := os.ReadFile("/proc/self/environ")
	if err != nil {
		return false
	}
	for kv := range bytes.SplitSeq(env, []byte{0}) {
		if v, ok := bytes.CutPrefix(kv, []byte("GODEBUG=")); ok {
			every, _ := lookup(string(v), "schedtrace")
			n, _ := strconv.Atoi(every)
			return n > 0
		}
	}
	return false
}

// lookup finds key's value in godebug's comma-separated key=value list;
// the runtime takes the last one set.
func lookup(godebug, key string) (value string, ok bool) {
	for field := range strings.SplitSeq(godebug, ",") {
		if k, v, found := strings.Cut(field, "="); found && k == key {
			value, ok = v, true
		}
	}
	return value, ok
}

// withSetting is godebug with setting added.
func withSetting(godebug, setting string) string {
	if godebug == "" {
		return setting
	}
	return godebug + "," + setting
}
