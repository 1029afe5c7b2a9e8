package e2e_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/chatd/chatd/internal/reexec"
	"github.com/chatd/chatd/internal/timerslack"
)

// chatd started with its defaults runs, in the process that was started
// (internal/reexec executes chatd again in place), every thread with
// --timer-slack's default, the Go runtime's monitor thread among them, and
// its runtime started with the monitor polling (--sysmon-poll); the
// processes it starts (the managed PostgreSQL) do not inherit that GODEBUG.
// Reading another thread's slack needs CAP_SYS_NICE, which the tests' root
// has.
func TestChatdRunsWithItsRuntimeSettings(t *testing.T) {
	t.Setenv("GODEBUG", "")
	p := &chatdProc{bin: mustBuildChatd(t), dataDir: mustDataDir(t), addr: freeAddr(t)}
	p.start(t)
	t.Cleanup(func() { p.terminate(t) })

	pid := strconv.Itoa(p.cmd.Process.Pid)
	tasks, err := filepath.Glob(filepath.Join("/proc", pid, "task", "*"))
	if err != nil || len(tasks) < 2 {
		t.Fatalf("threads of chatd (pid %s): %v, %v", pid, tasks, err)
	}
	want := strconv.FormatInt(timerslack.DefaultSlack.Nanoseconds(), 10)
	for _, task := range tasks {
		b, err := os.ReadFile(filepath.Join("/proc", filepath.Base(task), "timerslack_ns"))
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.TrimSpace(string(b)); got != want {
			t.Fatalf("chatd's thread %s has a timer slack of %s ns, want --timer-slack's default %s", filepath.Base(task), got, want)
		}
	}

	if got := environGODEBUG(t, pid); got != reexec.MonitorGODEBUG {
		t.Fatalf("chatd's runtime started with GODEBUG %q, want %q (--sysmon-poll's default)", got, reexec.MonitorGODEBUG)
	}
	children := childrenOf(t, pid)
	if len(children) == 0 {
		t.Fatalf("chatd (pid %s) has no child process; the managed PostgreSQL should be one", pid)
	}
	for _, child := range children {
		if got := environGODEBUG(t, child); got != "" {
			t.Fatalf("chatd's child process %s inherited GODEBUG %q; chatd should give it GODEBUG as chatd was started with it (unset)", child, got)
		}
	}
}

// environGODEBUG is the GODEBUG process pid was executed with.
func environGODEBUG(t *testing.T, pid string) string {
	t.Helper()
	env, err := os.ReadFile(filepath.Join("/proc", pid, "environ"))
	if err != nil {
		t.Fatal(err)
	}
	for kv := range bytes.SplitSeq(env, []byte{0}) {
		if v, ok := bytes.CutPrefix(kv, []byte("GODEBUG=")); ok {
			return string(v)
		}
	}
	return ""
}

// childrenOf are the ids of the processes whose parent is pid.
func childrenOf(t *testing.T, pid string) []string {
	t.Helper()
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, stat := range stats {
		b, err := os.ReadFile(stat)
		if err != nil {
			continue // exited since the glob
		}
		// The command name, in parentheses, may hold spaces: the parent
		// id is the second field after its closing parenthesis.
		i := bytes.LastIndexByte(b, ')')
		if fields := strings.Fields(string(b[i+1:])); i >= 0 && len(fields) > 1 && fields[1] == pid {
			out = append(out, filepath.Base(filepath.Dir(stat)))
		}
	}
	return out
}
