package main

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// chatdCounters are the chatd metrics that tell why clients were closed or
// held back: closes by code, withdrawals by reason, frames a full outbound
// queue refused, and pacing (deliveries held for a connection at its
// max-pending budget, and those still held, none once drained). Read from
// the first node once the load has drained.
var chatdCounters = []string{
	"chatd_ws_closes_total",
	"chatd_push_withdrawn_total",
	"chatd_ws_outbound_full_total",
	"chatd_push_paced_total",
	"chatd_push_held", // after the drain, anything but none is a leak
	`chatd_push_delivered_frames_total{path="released"}`,
	`chatd_push_delivered_frames_total{path="redelivery"}`,
	"chatd_http_connections_refused_total",
}

// scrapeCounters returns the non-zero samples of chatdCounters at url, keyed
// by the sample's name and labels.
func scrapeCounters(ctx context.Context, hc *http.Client, url string) (map[string]float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"/metrics", nil)
	if err != nil {
		return nil, fmt.Errorf("metrics request: %w", err)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	defer resp.Body.Close()
	out := make(map[string]float64)
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		name, val, ok := strings.Cut(sc.Text(), " ")
		if !ok || !wanted(name) {
			continue
		}
		if v, err := strconv.ParseFloat(val, 64); err == nil && v != 0 {
			out[name] = v
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("metrics: read: %w", err)
	}
	return out, nil
}

func wanted(sample string) bool {
	base, _, _ := strings.Cut(sample, "{")
	for _, c := range chatdCounters {
		if c == sample || c == base {
			return true
		}
	}
	return false
}
