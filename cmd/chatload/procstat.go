package main

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
)

// procSampler reads a chatd process's resident memory and CPU time.
type procSampler interface {
	sample(ctx context.Context) (rssBytes int64, cpuSeconds float64, err error)
	// source says whose numbers these are, for the report.
	source() string
}

// procFS samples local processes from /proc (Linux), summed.
type procFS struct {
	pids []int
	desc string
}

// clockTicks is USER_HZ, the unit of /proc/PID/stat's times; 100 on every
// Linux architecture Go supports.
const clockTicks = 100

func (p procFS) source() string { return p.desc }

func (p procFS) sample(context.Context) (int64, float64, error) {
	var rss int64
	var cpu float64
	for _, pid := range p.pids {
		r, c, err := sampleProc(pid)
		if err != nil {
			return 0, 0, err
		}
		rss, cpu = rss+r, cpu+c
	}
	return rss, cpu, nil
}

// sampleProc reads one process's resident memory and CPU seconds.
func sampleProc(pid int) (int64, float64, error) {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, fmt.Errorf("proc status: %w", err)
	}
	var rss int64
	for line := range strings.Lines(string(status)) {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			rss = kb * 1024
		}
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, fmt.Errorf("proc stat: %w", err)
	}
	// The command name may hold spaces; the fields after its ')' are
	// state(3) ... utime(14) stime(15).
	s := string(stat)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0, 0, fmt.Errorf("proc stat: %d fields", len(f))
	}
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return rss, (ut + st) / clockTicks, nil
}

// metricsScrape samples a remote chatd from its Prometheus process metrics.
type metricsScrape struct {
	url  string
	http *http.Client
}

func (m metricsScrape) source() string { return "chatd only, from " + m.url + "/metrics" }

func (m metricsScrape) sample(ctx context.Context) (int64, float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, m.url+"/metrics", nil)
	if err != nil {
		return 0, 0, fmt.Errorf("metrics request: %w", err)
	}
	resp, err := m.http.Do(req)
	if err != nil {
		return 0, 0, fmt.Errorf("metrics: %w", err)
	}
	defer resp.Body.Close()
	var rss, cpu float64
	found := 0
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		name, val, ok := strings.Cut(sc.Text(), " ")
		switch {
		case !ok:
		case name == "process_resident_memory_bytes":
			rss, _ = strconv.ParseFloat(val, 64)
			found++
		case name == "process_cpu_seconds_total":
			cpu, _ = strconv.ParseFloat(val, 64)
			found++
		}
	}
	if err := sc.Err(); err != nil {
		return 0, 0, fmt.Errorf("metrics: read: %w", err)
	}
	if found < 2 {
		return 0, 0, fmt.Errorf("metrics: no process_* metrics at %s/metrics", m.url)
	}
	return int64(rss), cpu, nil
}

// newProcSampler picks what to measure: a --pid, else the embedded node's
// process (this one), else the remote target's /metrics.
func newProcSampler(cfg *Config, t *target, hc *http.Client) procSampler {
	switch {
	case len(cfg.PIDs) == 1:
		return procFS{pids: cfg.PIDs, desc: fmt.Sprintf("chatd process %d (/proc)", cfg.PIDs[0])}
	case len(cfg.PIDs) > 1:
		return procFS{pids: cfg.PIDs, desc: fmt.Sprintf("%d chatd processes %v, summed (/proc)", len(cfg.PIDs), cfg.PIDs)}
	case t.embedded:
		return procFS{pids: []int{os.Getpid()}, desc: "chatload process: embedded chatd + NATS + the load generator itself (PostgreSQL, a child process, not counted)"}
	default:
		return metricsScrape{url: t.url, http: hc}
	}
}
