package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// cpuCost is the CPU each party spent per accepted message over the load
// phase (warm-up and measured window): the figure issue 12 sets goals on
// (chatd ≤ 85 µs, PostgreSQL ≤ 60 µs at 5,000 msg/s), with the load
// generator's own cost beside it, since all three share the machine.
type cpuCost struct {
	ChatdUS    float64 `json:"chatd_us_per_msg"`
	PostgresUS float64 `json:"postgres_us_per_msg,omitempty"`
	ChatloadUS float64 `json:"chatload_us_per_msg"`
	// PostgresNote says why PostgreSQL's figure is missing.
	PostgresNote string `json:"postgres_note,omitempty"`
}

// cpuMarks are the CPU counters read at one instant, in seconds.
type cpuMarks struct {
	postgres   float64
	postgresOK bool
	self       float64
	accepted   int64
}

// readCPUMarks reads PostgreSQL's and this process's CPU time now.
func readCPUMarks(accepted int64) cpuMarks {
	m := cpuMarks{accepted: accepted, self: selfCPUSeconds()}
	m.postgres, m.postgresOK = postgresCPUSeconds()
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
		c.PostgresNote = "no local postgres processes readable in /proc"
	}
	return c
}

// selfCPUSeconds is this process's user and system time.
func selfCPUSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

// postgresCPUSeconds sums the user and system time of every process named
// postgres on this machine (the postmaster, its backends and background
// workers), with the time of their exited children. A backend that exits
// during the load takes its time with it unless the postmaster reaped it,
// which it does: cutime covers them. False when none is readable.
func postgresCPUSeconds() (float64, bool) {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	var total float64
	found := false
	for _, path := range stats {
		raw, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		s := string(raw)
		open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || end < open || s[open+1:end] != "postgres" {
			continue
		}
		f := strings.Fields(s[end+1:])
		if len(f) < 15 {
			continue
		}
		var ticks float64
		for _, i := range []int{11, 12, 13, 14} { // utime stime cutime cstime
			v, _ := strconv.ParseFloat(f[i], 64)
			ticks += v
		}
		total += ticks / clockTicks
		found = true
	}
	return total, found
}

// String is the report line.
func (c *cpuCost) String() string {
	pg := "PostgreSQL n/a (" + c.PostgresNote + ")"
	if c.PostgresNote == "" {
		pg = fmt.Sprintf("PostgreSQL %.0f µs", c.PostgresUS)
	}
	return fmt.Sprintf("chatd %.0f µs, %s, chatload %.0f µs", c.ChatdUS, pg, c.ChatloadUS)
}
