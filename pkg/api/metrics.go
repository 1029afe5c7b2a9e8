package api

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the gateway's and REST's counters, registered on the
// Config.Registry (never on a global registry).
type metrics struct {
	connections prometheus.Gauge
	framesIn    *prometheus.CounterVec // by client frame type
	framesOut   *prometheus.CounterVec // by server frame type
	rejects     *prometheus.CounterVec // by rejected code
	closes      *prometheus.CounterVec // by close code
	queueFull   *prometheus.CounterVec // outbound queue full, by frame type
	responses   *prometheus.CounterVec // REST responses by status
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		connections: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "chatd_ws_connections", Help: "Open WebSocket connections.",
		}),
		framesIn: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "chatd_ws_frames_in_total", Help: "Client frames received, by type (invalid and protocol for bad ones).",
		}, []string{"type"}),
		framesOut: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "chatd_ws_frames_out_total", Help: "Server frames written, by type.",
		}, []string{"type"}),
		rejects: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "chatd_ws_rejects_total", Help: "rejected frames sent, by code.",
		}, []string{"code"}),
		closes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "chatd_ws_closes_total", Help: "WebSocket connections ended, by close code (peer: the client closed or vanished).",
		}, []string{"code"}),
		queueFull: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "chatd_ws_outbound_full_total", Help: "Frames not queued because a connection's outbound queue was full, by type.",
		}, []string{"type"}),
		responses: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "chatd_http_responses_total", Help: "HTTP responses, by status code.",
		}, []string{"status"}),
	}
	for _, c := range []prometheus.Collector{m.connections, m.framesIn, m.framesOut, m.rejects, m.closes, m.queueFull, m.responses} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register api metrics: %w", err)
		}
	}
	return m, nil
}
