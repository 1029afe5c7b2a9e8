package e2e_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/chatd/chatd/internal/timerslack"
)

// chatd started with its defaults runs every thread, the Go runtime's
// monitor thread among them, with --timer-slack's default, in the process
// that was started (internal/timerslack executes chatd again in place).
// Reading another thread's slack needs CAP_SYS_NICE, which the tests' root
// has.
func TestChatdRunsWithTheDefaultTimerSlack(t *testing.T) {
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
}
