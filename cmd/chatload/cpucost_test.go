package main

import (
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// CPU per message is each party's CPU over the accepted count of the same
// span; a span with nothing accepted has no figure, and PostgreSQL's is
// left out (with why) when its processes could not be read at both ends.
func TestPerMessage(t *testing.T) {
	start := cpuMarks{postgres: 10, postgresOK: true, self: 5, accepted: 1000}
	stop := cpuMarks{postgres: 10.6, postgresOK: true, self: 5.8, accepted: 11000}
	got := perMessage(start, stop, 1.45)
	want := cpuCost{ChatdUS: 145, PostgresUS: 60, ChatloadUS: 80}
	if got == nil || math.Abs(got.ChatdUS-want.ChatdUS) > 1e-9 || math.Abs(got.PostgresUS-want.PostgresUS) > 1e-9 ||
		math.Abs(got.ChatloadUS-want.ChatloadUS) > 1e-9 || got.PostgresNote != "" {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	stop.postgresOK = false
	if got := perMessage(start, stop, 1.45); got == nil || got.PostgresUS != 0 || got.PostgresNote == "" {
		t.Errorf("without PostgreSQL at the end: got %+v, want no figure and a note", got)
	}
	if got := perMessage(start, start, 1); got != nil {
		t.Errorf("nothing accepted: got %+v, want nil", got)
	}
}

// PostgreSQL's CPU counts only the postgres processes under the measured
// chatd: another cluster on the machine (CI runs test packages with their
// own clusters side by side) is left out, since its processes exiting
// between the two reads made the figure negative.
func TestPostgresCPUCountsOnlyTheTreeUnderRoot(t *testing.T) {
	// A process named postgres, as a child of this test.
	bin := filepath.Join(t.TempDir(), "postgres")
	sleep, err := os.ReadFile("/bin/sleep")
	if err != nil {
		t.Skipf("no /bin/sleep to stand in for postgres: %v", err)
	}
	if err := os.WriteFile(bin, sleep, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	// Another root with no postgres under it.
	other := exec.Command("/bin/sleep", "30")
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = other.Process.Kill(); _ = other.Wait() })

	deadline := time.Now().Add(5 * time.Second)
	for !descends(readProcStats(), cmd.Process.Pid, os.Getpid()) {
		if time.Now().After(deadline) {
			t.Fatal("the stand-in postgres never showed up under this process in /proc")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, found := postgresCPUSeconds(readProcStats(), os.Getpid()); !found {
		t.Error("postgres under this process: not found")
	}
	if _, found := postgresCPUSeconds(readProcStats(), other.Process.Pid); found {
		t.Error("postgres under another root: counted, want only that root's tree")
	}
	if _, found := postgresCPUSeconds(readProcStats(), 0); !found {
		t.Error("root 0 (every postgres on the machine): not found")
	}
}
