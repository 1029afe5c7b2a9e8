package api

import (
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// readsSocket looks inside fasthttp's hijacked connection by reflection.
// If a fasthttp upgrade changed that layout, every WebSocket would quietly
// keep its request context and buffers for life (the safe fallback), and
// idle connections would cost ~7 KiB more each. This test makes that loud:
// a plain upgrade-like request must be seen as reading the socket, and one
// with bytes sent past the request must not.
func TestReadsSocketSeesFasthttpsHijackedConnection(t *testing.T) {
	for _, tc := range []struct {
		name  string
		extra string
		want  bool
	}{
		{"nothing past the request", "", true},
		{"bytes past the request", "early", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			ll := newLimitListener(ln, 10, 5*time.Second, newMetrics(nil), slog.New(slog.DiscardHandler))
			got := make(chan bool, 1)
			srv := &fasthttp.Server{
				ReduceMemoryUsage: true,
				KeepHijackedConns: true,
				Handler: func(ctx *fasthttp.RequestCtx) {
					ctx.Hijack(func(c net.Conn) {
						got <- readsSocket(c)
						_ = c.Close()
					})
				},
			}
			go func() { _ = srv.Serve(ll) }()
			defer func() { _ = srv.Shutdown() }()
			conn, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if _, err := conn.Write([]byte("GET /ws HTTP/1.1\r\nHost: x\r\n\r\n" + tc.extra)); err != nil {
				t.Fatal(err)
			}
			select {
			case ok := <-got:
				if ok != tc.want {
					t.Fatalf("readsSocket = %v, want %v: fasthttp's hijacked connection no longer looks as readsSocket expects (check the field it reads against the fasthttp version in go.mod)", ok, tc.want)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("the hijack handler never ran")
			}
		})
	}
}
