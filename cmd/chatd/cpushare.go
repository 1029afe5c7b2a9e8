package main

import (
	"context"
	"log/slog"
	"os"
	"runtime"
	"time"

	"github.com/chatd/chatd/internal/cpushare"
)

// cpuShareEvery is how often a chatd counts again the chatd processes it
// shares its CPUs with: a node started or stopped beside it is seen within
// that. A count takes about 0.3 ms (BenchmarkCount in internal/cpushare).
const cpuShareEvery = 2 * time.Second

// shareCPUs runs Go on this process's share of its CPUs while other chatd
// processes run on the same ones (internal/cpushare), counting them again
// every cpuShareEvery. It does nothing when the processors were chosen: by
// --max-procs, by the GOMAXPROCS variable, or by a container's CPU limit,
// which Go follows. The returned function stops it and waits.
func shareCPUs(ctx context.Context, maxProcs int, log *slog.Logger) (stop func()) {
	if maxProcs > 0 || os.Getenv("GOMAXPROCS") != "" {
		return func() {}
	}
	cpus := runtime.NumCPU()
	if runtime.GOMAXPROCS(0) < cpus {
		return func() {}
	}
	group, err := cpushare.MachineGroup()
	var s *cpuSharing
	if err == nil {
		s, err = takeSeat(group, cpus, log)
	}
	if err != nil {
		log.Warn("could not count the chatd processes sharing this machine's CPUs, so this one runs Go on all of them; set --max-procs to divide them by hand", "err", err)
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		defer s.seat.Close()
		tick := time.NewTicker(cpuShareEvery)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				s.adjust()
			}
		}
	}()
	return func() { cancel(); <-stopped }
}

// cpuSharing is shareCPUs's state, owned by its goroutine after the first
// adjust.
type cpuSharing struct {
	seat      *cpushare.Seat
	cpus      int
	processes int  // counted last, this one included
	warned    bool // a failed count was logged
	log       *slog.Logger
}

// takeSeat takes a seat in group and sets GOMAXPROCS to this process's
// share of cpus.
func takeSeat(group string, cpus int, log *slog.Logger) (*cpuSharing, error) {
	seat, err := cpushare.Take(group)
	if err != nil {
		return nil, err
	}
	s := &cpuSharing{seat: seat, cpus: cpus, processes: 1, log: log}
	s.adjust()
	return s, nil
}

// adjust counts the processes again and sets GOMAXPROCS to this one's share
// when the count changed, saying so when that changes it; alone again, it
// gives the choice back to Go.
func (s *cpuSharing) adjust() {
	n, err := s.seat.Count()
	if err != nil {
		if !s.warned {
			s.log.Warn("could not count the chatd processes sharing this machine's CPUs; GOMAXPROCS stays as it is", "procs", runtime.GOMAXPROCS(0), "err", err)
			s.warned = true
		}
		return
	}
	if n == s.processes {
		return
	}
	s.processes = n
	before := runtime.GOMAXPROCS(0)
	if n == 1 {
		runtime.SetDefaultGOMAXPROCS()
	} else {
		runtime.GOMAXPROCS(cpushare.Share(s.cpus, n))
	}
	if procs := runtime.GOMAXPROCS(0); procs != before {
		s.log.Info("chatd processes share this machine's CPUs, so Go runs on this one's share (--max-procs sets it by hand)",
			"processes", n, "cpus", s.cpus, "procs", procs)
	}
}
