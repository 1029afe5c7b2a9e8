//go:build linux

package timerslack

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// helperEnv makes the test binary, run again by a test, act as a program
// that calls Apply first thing and then reports its threads' slack.
const helperEnv = "TIMERSLACK_TEST_HELPER"

func TestMain(m *testing.M) {
	if want, ok := os.LookupEnv(helperEnv); ok {
		os.Exit(helper(want))
	}
	os.Exit(m.Run())
}

// helper is the program: Apply, then one line of every thread's slack in
// nanoseconds, then whether the marker is still in the environment.
func helper(want string) int {
	d, err := time.ParseDuration(want)
	if err == nil {
		err = Apply(d)
	}
	if err != nil {
		fmt.Println("apply:", err)
		return 1
	}
	// A thread's slack is /proc/TID/timerslack_ns (reading another
	// thread's needs CAP_SYS_NICE, which the tests' root has).
	tasks, err := filepath.Glob("/proc/self/task/*")
	if err != nil || len(tasks) == 0 {
		fmt.Println("no threads:", err)
		return 1
	}
	var slacks []string
	for _, task := range tasks {
		b, err := os.ReadFile(filepath.Join("/proc", filepath.Base(task), "timerslack_ns"))
		if err != nil {
			fmt.Println("read:", err)
			return 1
		}
		slacks = append(slacks, strings.TrimSpace(string(b)))
	}
	_, marked := os.LookupEnv(marker)
	fmt.Printf("pid %d slacks %s marker %v\n", os.Getpid(), strings.Join(slacks, ","), marked)
	return 0
}

// runHelper runs the program with want and returns the slacks of its threads
// and whether its own environment still held the marker.
func runHelper(t *testing.T, want string) (slacks []int64, marked bool) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+want)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the program with %s: %v\n%s", want, err, out)
	}
	var pid int
	var list string
	if _, err := fmt.Sscanf(string(out), "pid %d slacks %s marker %t", &pid, &list, &marked); err != nil {
		t.Fatalf("the program with %s printed %q: %v", want, out, err)
	}
	if pid != cmd.Process.Pid {
		t.Fatalf("the program ran as pid %d, started as %d: the execution must stay in the process", pid, cmd.Process.Pid)
	}
	for _, s := range strings.Split(list, ",") {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		slacks = append(slacks, n)
	}
	return slacks, marked
}

// Every thread of the program, the runtime's monitor thread among them,
// has the slack asked for, the execution stays in the same process, and
// the marker does not outlive it (the processes chatd starts must not see
// it).
func TestEveryThreadHasTheSlack(t *testing.T) {
	slacks, marked := runHelper(t, "3ms")
	if len(slacks) < 2 {
		t.Fatalf("the program had %d thread(s); the runtime's monitor thread alone makes two", len(slacks))
	}
	for i, s := range slacks {
		if s != 3_000_000 {
			t.Fatalf("thread %d of %d has a slack of %d ns, want 3000000 (all: %v)", i+1, len(slacks), s, slacks)
		}
	}
	if marked {
		t.Fatalf("%s is still set after Apply: chatd's child processes would inherit it", marker)
	}
}

// With 0 nothing is set: the threads keep the slack the program was
// started with, as this test's own process has it.
func TestZeroKeepsTheInheritedSlack(t *testing.T) {
	own, err := Current()
	if err != nil {
		t.Fatal(err)
	}
	slacks, _ := runHelper(t, "0s")
	for i, s := range slacks {
		if time.Duration(s) != own {
			t.Fatalf("thread %d has a slack of %d ns, want the inherited %d", i+1, s, own.Nanoseconds())
		}
	}
}
