package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/chatd/chatd/internal/rusage"
)

// cpuCost is the CPU each party spent per accepted message over the load
// phase (warm-up and measured window): the figure BENCHMARKS.md reports
// for chatd and PostgreSQL, with the load generator's own cost beside it,
// since all three share the machine.
type cpuCost struct {
	ChatdUS    float64 `json:"chatd_us_per_msg"`
	PostgresUS float64 `json:"postgres_us_per_msg,omitempty"`
	ChatloadUS float64 `json:"chatload_us_per_msg"`
	// NATSUS is the nats-server processes' (a NATS outside chatd); absent
	// when none runs.
	NATSUS float64 `json:"nats_us_per_msg,omitempty"`
	// PostgresNote says why PostgreSQL's figure is missing.
	PostgresNote string `json:"postgres_note,omitempty"`
}

// cpuMarks are the CPU counters read at one instant, in seconds.
type cpuMarks struct {
	postgres   float64
	postgresOK bool
	nats       float64
	natsOK     bool
	self       float64
	accepted   int64
}

// readCPUMarks reads this process's CPU time now, and that of the
// PostgreSQL processes under root (see postgresCPUSeconds).
func readCPUMarks(accepted int64, root int) cpuMarks {
	m := cpuMarks{accepted: accepted, self: rusage.SelfCPUSeconds()}
	procs := readProcStats()
	m.postgres, m.postgresOK = postgresCPUSeconds(procs, root)
	m.nats, m.natsOK = cpuSecondsOf(procs, "nats-server")
	return m
}

// perMessage turns two marks and chatd's CPU seconds over the same span
// into microseconds per accepted message.
func perMessage(start, stop cpuMarks, chatdSeconds float64) *cpuCost {
	n := stop.accepted - start.accepted
	if n <= 0 {
		return nil
	}
	us := func(s float64) float64 { return s * 1e6 / float64(n) }
	c := &cpuCost{ChatdUS: us(chatdSeconds), ChatloadUS: us(stop.self - start.self)}
	if start.postgresOK && stop.postgresOK {
		c.PostgresUS = us(stop.postgres - start.postgres)
	} else {
		c.PostgresNote = "no postgres processes under chatd readable in /proc (PostgreSQL elsewhere, or not started by chatd)"
	}
	if start.natsOK && stop.natsOK {
		c.NATSUS = us(stop.nats - start.nats)
	}
	return c
}

// postgresCPUSeconds sums the user and system time of the processes named
// postgres that descend from root (chatd's managed cluster: its postmaster,
// backends and background workers), with the time of their exited children
// (cutime: the postmaster reaps its backends, so a backend that exits
// between two reads keeps its time in the sum). Summing every postgres on
// the machine instead went negative when another cluster's processes
// exited between the two reads (CI runs test packages, each with its own
// cluster, side by side). root 0 (PostgreSQL not started by the measured
// chatd) takes every postgres process. False when none is readable.
func postgresCPUSeconds(procs map[int]procStat, root int) (float64, bool) {
	var total float64
	found := false
	for pid, p := range procs {
		if p.comm != "postgres" || (root != 0 && !descends(procs, pid, root)) {
			continue
		}
		total += p.cpuTicks / clockTicks
		found = true
	}
	return total, found
}

// cpuSecondsOf sums the CPU time of the processes named comm; false when
// there are none.
func cpuSecondsOf(procs map[int]procStat, comm string) (float64, bool) {
	var total float64
	found := false
	for _, p := range procs {
		if p.comm == comm {
			total += p.cpuTicks / clockTicks
			found = true
		}
	}
	return total, found
}

// procStat is what postgresCPUSeconds needs of one /proc/<pid>/stat.
type procStat struct {
	comm     string
	ppid     int
	cpuTicks float64 // utime + stime + cutime + cstime
}

// readProcStats reads every process's stat; a process that exits meanwhile
// is left out.
func readProcStats() map[int]procStat {
	paths, _ := filepath.Glob("/proc/[0-9]*/stat")
	out := make(map[int]procStat, len(paths))
	for _, path := range paths {
		pid, err := strconv.Atoi(filepath.Base(filepath.Dir(path)))
		if err != nil {
			continue
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		s := string(raw)
		open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || end < open {
			continue
		}
		f := strings.Fields(s[end+1:])
		if len(f) < 15 {
			continue
		}
		p := procStat{comm: s[open+1 : end]}
		p.ppid, _ = strconv.Atoi(f[1])
		for _, i := range []int{11, 12, 13, 14} { // utime stime cutime cstime
			v, _ := strconv.ParseFloat(f[i], 64)
			p.cpuTicks += v
		}
		out[pid] = p
	}
	return out
}

// descends reports whether pid's chain of parents in procs reaches root.
func descends(procs map[int]procStat, pid, root int) bool {
	for hops := 0; pid > 1 && hops < len(procs); hops++ {
		p, ok := procs[pid]
		if !ok {
			return false
		}
		if p.ppid == root {
			return true
		}
		pid = p.ppid
	}
	return false
}

// String is the report line.
func (c *cpuCost) String() string {
	pg := "PostgreSQL n/a (" + c.PostgresNote + ")"
	if c.PostgresNote == "" {
		pg = fmt.Sprintf("PostgreSQL %.0f µs", c.PostgresUS)
	}
	if c.NATSUS > 0 {
		pg += fmt.Sprintf(", NATS servers %.0f µs", c.NATSUS)
	}
	return fmt.Sprintf("chatd %.0f µs, %s, chatload %.0f µs", c.ChatdUS, pg, c.ChatloadUS)
}
