package main

import (
	"fmt"
	"html"
	"os"
	"strings"
)

// The HTML report is one file with inline SVG drawn here: no scripts, no
// stylesheets or fonts fetched, so it opens anywhere, offline, years later.

type series struct {
	name  string
	color string
	ys    []float64
}

const (
	chartW, chartH = 760, 220
	padL, padR     = 64, 16
	padT, padB     = 28, 32
)

// svgChart draws series over xs (seconds) as lines on a zero-based y axis.
func svgChart(title, unit string, xs []float64, ss []series) string {
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d">`, chartW, chartH, chartW, chartH)
	fmt.Fprintf(&b, `<text x="%d" y="18" class="t">%s</text>`, padL, html.EscapeString(title))
	ymax, xmax := 0.0, 0.0
	for _, s := range ss {
		for _, y := range s.ys {
			ymax = max(ymax, y)
		}
	}
	for _, x := range xs {
		xmax = max(xmax, x)
	}
	if ymax == 0 {
		ymax = 1
	}
	ymax *= 1.1
	xmax = max(xmax, 1)
	pw, ph := float64(chartW-padL-padR), float64(chartH-padT-padB)
	px := func(x float64) float64 { return float64(padL) + x/xmax*pw }
	py := func(y float64) float64 { return float64(padT) + ph - y/ymax*ph }
	for i := 0; i <= 4; i++ {
		y := ymax * float64(i) / 4
		fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" class="g"/>`, padL, chartW-padR, py(y), py(y))
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" class="l" text-anchor="end">%s</text>`, padL-6, py(y)+4, fmtAxis(y))
	}
	for i := 0; i <= 5; i++ {
		x := xmax * float64(i) / 5
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" class="l" text-anchor="middle">%.0fs</text>`, px(x), chartH-padB+16, x)
	}
	fmt.Fprintf(&b, `<text x="8" y="%d" class="l">%s</text>`, padT-8, html.EscapeString(unit))
	for i, s := range ss {
		var pts strings.Builder
		for j, y := range s.ys {
			if j < len(xs) {
				fmt.Fprintf(&pts, "%.1f,%.1f ", px(xs[j]), py(y))
			}
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="1.6" points="%s"/>`, s.color, pts.String())
		lx := chartW - padR - 150*(len(ss)-i)
		fmt.Fprintf(&b, `<rect x="%d" y="8" width="10" height="10" fill="%s"/><text x="%d" y="17" class="l">%s</text>`,
			lx, s.color, lx+14, html.EscapeString(s.name))
	}
	b.WriteString(`</svg>`)
	return b.String()
}

func fmtAxis(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%.1fM", v/1e6)
	case v >= 1e4:
		return fmt.Sprintf("%.0fk", v/1e3)
	case v >= 10:
		return fmt.Sprintf("%.0f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}

// column extracts one field of every sample.
func column(ss []Sample, f func(Sample) float64) []float64 {
	out := make([]float64, len(ss))
	for i, s := range ss {
		out[i] = f(s)
	}
	return out
}

func (r *Report) writeHTML(path string) error {
	var b strings.Builder
	verdict, vclass := "PASS", "ok"
	if !r.Pass {
		verdict, vclass = "FAIL", "bad"
	}
	fmt.Fprintf(&b, `<!doctype html><html><head><meta charset="utf-8"><title>chatload %s</title><style>
body{font:14px system-ui,sans-serif;margin:24px;color:#222}table{border-collapse:collapse}td{padding:2px 12px 2px 0;vertical-align:top}
.ok{color:#080}.bad{color:#c00}svg{display:block;margin:12px 0}.t{font-weight:600;font-size:13px}.l{font-size:11px;fill:#555}.g{stroke:#e4e4e4}
pre{background:#f6f6f6;padding:8px}</style></head><body>`, html.EscapeString(r.Scenario))
	fmt.Fprintf(&b, `<h1>chatload %s: <span class="%s">%s</span></h1>`, html.EscapeString(r.Scenario), vclass, verdict)
	var text strings.Builder
	r.writeText(&text)
	fmt.Fprintf(&b, `<pre>%s</pre>`, html.EscapeString(text.String()))

	tl := r.Timeline
	xs := column(tl, func(s Sample) float64 { return s.T })
	charts := []string{
		svgChart("Rate", "msgs/s", xs, []series{
			{"accepted/s", "#1f77b4", column(tl, func(s Sample) float64 { return s.AcceptedPerSec })},
			{"delivered/s", "#2ca02c", column(tl, func(s Sample) float64 { return s.DeliveredPerSec })},
		}),
		svgChart("Deliveries per accepted (cumulative msg frames / expected)", "ratio", xs, []series{
			{"deliveries/accepted", "#d62728", column(tl, func(s Sample) float64 { return s.DeliveriesPerAccepted })},
		}),
		svgChart("Outbox depth", "messages", xs, []series{
			{"postgres outbox", "#9467bd", column(tl, func(s Sample) float64 { return float64(s.OutboxPostgres) })},
			{"stream backlog", "#ff7f0e", column(tl, func(s Sample) float64 { return float64(s.StreamBacklog) })},
		}),
		svgChart("Latency (per second)", "ms", xs, []series{
			{"accept p50", "#aec7e8", column(tl, func(s Sample) float64 { return s.AcceptP50 })},
			{"accept p99", "#1f77b4", column(tl, func(s Sample) float64 { return s.AcceptP99 })},
			{"deliver p50", "#98df8a", column(tl, func(s Sample) float64 { return s.DeliverP50 })},
			{"deliver p99", "#2ca02c", column(tl, func(s Sample) float64 { return s.DeliverP99 })},
		}),
		svgChart("chatd RSS ("+r.ProcSource+")", "MiB", xs, []series{
			{"RSS", "#8c564b", column(tl, func(s Sample) float64 { return float64(s.RSS) / (1 << 20) })},
		}),
		svgChart("Reconnects (cumulative)", "count", xs, []series{
			{"reconnects", "#7f7f7f", column(tl, func(s Sample) float64 { return float64(s.Reconnects) })},
		}),
	}
	for _, c := range charts {
		b.WriteString(c)
	}
	b.WriteString(`</body></html>`)
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("write html report: %w", err)
	}
	return nil
}
