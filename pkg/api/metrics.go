package api

import (
	"github.com/chatd/chatd/pkg/wire"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the gateway's and REST's counters, registered on the
// Config.Registry (never on a global registry).
type metrics struct {
	connections prometheus.Gauge
	framesIn    labelledCounter        // by client frame type
	framesOut   labelledCounter        // by server frame type
	wsWrites    prometheus.Counter     // socket writes carrying data frames
	rejects     *prometheus.CounterVec // by rejected code
	closes      *prometheus.CounterVec // by close code
	queueFull   *prometheus.CounterVec // outbound queue full, by frame type
	responses   *prometheus.CounterVec // REST responses by status
	httpConns   prometheus.Gauge       // open TCP connections on the listener
	httpRefused prometheus.Counter     // connections refused over MaxConnections
	// httpAcceptRetries counts accept errors waited out (out of file descriptors).
	httpAcceptRetries prometheus.Counter

	tokenRefreshes *prometheus.CounterVec // in-band token refreshes, by result (ok, refused)
	tokenExpired   prometheus.Counter     // sessions closed 4401 because their token expired
}

func newMetrics(reg prometheus.Registerer) *metrics {
	// promauto.With(nil) builds without registering (tests, a component
	// used alone); a duplicate name on the app registry is a wiring bug and panics.
	f := promauto.With(reg)
	m := &metrics{
		connections: f.NewGauge(prometheus.GaugeOpts{
			Name: "chatd_ws_connections", Help: "Open WebSocket connections.",
		}),
		framesIn: newLabelledCounter(f.NewCounterVec(prometheus.CounterOpts{
			Name: "chatd_ws_frames_in_total", Help: "Client frames received, by type (invalid and protocol for bad ones).",
		}, []string{"type"}), append(wire.ClientFrameTypes(), "invalid", "protocol", "typing_dropped", "typing_limited")...),
		framesOut: newLabelledCounter(f.NewCounterVec(prometheus.CounterOpts{
			Name: "chatd_ws_frames_out_total", Help: "Server frames written, by type.",
		}, []string{"type"}), frameLabels(wire.FrameHello, wire.FrameAccepted, wire.FrameRejected, wire.FrameMsg,
			wire.FrameReceipt, wire.FramePong, wire.FramePresence, wire.FrameTyping, wire.FrameAuthed)...),
		wsWrites: f.NewCounter(prometheus.CounterOpts{
			Name: "chatd_ws_writes_total",
			Help: "Socket writes of data frames; the frames queued for a connection go out in one write, so chatd_ws_frames_out_total over this is the frames per write.",
		}),
		rejects: f.NewCounterVec(prometheus.CounterOpts{
			Name: "chatd_ws_rejects_total", Help: "rejected frames sent, by code.",
		}, []string{"code"}),
		closes: f.NewCounterVec(prometheus.CounterOpts{
			Name: "chatd_ws_closes_total", Help: "WebSocket connections ended, by close code (peer: the client closed or vanished).",
		}, []string{"code"}),
		queueFull: f.NewCounterVec(prometheus.CounterOpts{
			Name: "chatd_ws_outbound_full_total", Help: "Frames not queued because a connection's outbound queue was full, by type.",
		}, []string{"type"}),
		responses: f.NewCounterVec(prometheus.CounterOpts{
			Name: "chatd_http_responses_total", Help: "HTTP responses, by status code.",
		}, []string{"status"}),
		httpConns: f.NewGauge(prometheus.GaugeOpts{
			Name: "chatd_http_connections", Help: "Open TCP connections on the HTTP listener, WebSockets included.",
		}),
		httpRefused: f.NewCounter(prometheus.CounterOpts{
			Name: "chatd_http_connections_refused_total", Help: "Connections answered 503 and closed because --max-connections were open.",
		}),
		httpAcceptRetries: f.NewCounter(prometheus.CounterOpts{
			Name: "chatd_http_accept_retries_total", Help: "Accept errors the HTTP listener waited out and retried (e.g. out of file descriptors).",
		}),

		tokenRefreshes: f.NewCounterVec(prometheus.CounterOpts{
			Name: "chatd_ws_token_refreshes_total", Help: "In-band token refreshes (auth frames), by result: ok, or refused (closed 4401).",
		}, []string{"result"}),
		tokenExpired: f.NewCounter(prometheus.CounterOpts{
			Name: "chatd_ws_token_expired_total", Help: "WebSocket sessions closed with 4401 because their token expired without a refresh.",
		}),
	}
	return m
}
