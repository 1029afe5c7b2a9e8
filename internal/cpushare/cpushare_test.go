package cpushare_test

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/chatd/chatd/internal/cpushare"
)

// testGroup is a group no other process on the machine uses, so a chatd
// running beside the tests is not counted.
func testGroup() string {
	return fmt.Sprintf("chatd-cpushare-test-%d-%d", os.Getpid(), time.Now().UnixNano())
}

func count(t *testing.T, s *cpushare.Seat) int {
	t.Helper()
	n, err := s.Count()
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestSeatsCountTheProcessesOfTheirGroup(t *testing.T) {
	group := testGroup()
	var seats []*cpushare.Seat
	for range 3 {
		s, err := cpushare.Take(group)
		if err != nil {
			t.Fatal(err)
		}
		seats = append(seats, s)
	}
	for i, s := range seats {
		if n := count(t, s); n != 3 {
			t.Fatalf("seat %d counts %d processes, want 3", i, n)
		}
	}
	other, err := cpushare.Take(testGroup() + "-other")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if n := count(t, other); n != 1 {
		t.Fatalf("a seat of another group counts %d processes, want 1", n)
	}

	// A seat given up is counted no more, and the next to come takes it.
	if err := seats[0].Close(); err != nil {
		t.Fatal(err)
	}
	if n := count(t, seats[1]); n != 2 {
		t.Fatalf("after one seat was given up: %d processes, want 2", n)
	}
	again, err := cpushare.Take(group)
	if err != nil {
		t.Fatal(err)
	}
	seats[0] = again
	if n := count(t, seats[2]); n != 3 {
		t.Fatalf("after a seat was taken again: %d processes, want 3", n)
	}
	for _, s := range seats {
		_ = s.Close()
	}
}

func TestEverySeatTakenIsAnError(t *testing.T) {
	group := testGroup()
	for range cpushare.MaxSeats {
		s, err := cpushare.Take(group)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
	}
	if s, err := cpushare.Take(group); err == nil {
		s.Close()
		t.Fatalf("took seat %d of %d", cpushare.MaxSeats+1, cpushare.MaxSeats)
	}
}

func TestShareDividesTheCPUs(t *testing.T) {
	for _, c := range []struct{ cpus, processes, want int }{
		{2, 1, 2}, {2, 3, 1}, {8, 2, 4}, {8, 3, 2}, {4, 0, 4}, {1, 5, 1},
	} {
		if got := cpushare.Share(c.cpus, c.processes); got != c.want {
			t.Errorf("Share(%d CPUs, %d processes) = %d, want %d", c.cpus, c.processes, got, c.want)
		}
	}
}

func TestMachineGroupIsStable(t *testing.T) {
	a, err := cpushare.MachineGroup()
	if err != nil {
		t.Fatal(err)
	}
	b, err := cpushare.MachineGroup()
	if err != nil {
		t.Fatal(err)
	}
	if a != b || a == "" {
		t.Fatalf("MachineGroup gave %q then %q", a, b)
	}
}

// What a count costs: a chatd counts every few seconds.
func BenchmarkCount(b *testing.B) {
	s, err := cpushare.Take(testGroup())
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	for b.Loop() {
		if _, err := s.Count(); err != nil {
			b.Fatal(err)
		}
	}
}
