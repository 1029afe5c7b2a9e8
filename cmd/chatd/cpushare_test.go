package main

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/chatd/chatd/internal/cpushare"
)

// A chatd that finds other chatd processes on its CPUs runs Go on its
// share of them, says so, and gives the choice back to Go once alone again.
func TestSharedCPUsDividedAmongTheProcesses(t *testing.T) {
	if runtime.NumCPU() < 2 {
		t.Skip("one CPU cannot be divided")
	}
	t.Cleanup(runtime.SetDefaultGOMAXPROCS)
	runtime.SetDefaultGOMAXPROCS()
	cpus := runtime.GOMAXPROCS(0)
	group := fmt.Sprintf("chatd-cmd-test-%d", os.Getpid())
	other, err := cpushare.Take(group) // another chatd, started first
	if err != nil {
		t.Fatal(err)
	}
	var logged bytes.Buffer
	s, err := takeSeat(group, cpus, slog.New(slog.NewTextHandler(&logged, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer s.seat.Close()
	if got, want := runtime.GOMAXPROCS(0), cpushare.Share(cpus, 2); got != want {
		t.Fatalf("GOMAXPROCS %d beside another chatd on %d CPUs, want %d", got, cpus, want)
	}
	if !strings.Contains(logged.String(), "processes=2") || !strings.Contains(logged.String(), fmt.Sprintf("procs=%d", cpushare.Share(cpus, 2))) {
		t.Fatalf("the change is not logged with the count and the share:\n%s", logged.String())
	}

	if err := other.Close(); err != nil {
		t.Fatal(err)
	}
	s.adjust()
	if got := runtime.GOMAXPROCS(0); got != cpus {
		t.Fatalf("GOMAXPROCS %d once alone again, want Go's choice, %d", got, cpus)
	}
}
