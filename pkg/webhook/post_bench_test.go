package webhook

import (
	"context"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// benchReceiver answers every request 204 from a fasthttp server, so that
// what a post costs above it is the sender's.
func benchReceiver(b *testing.B) string {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := &fasthttp.Server{Handler: func(c *fasthttp.RequestCtx) { c.SetStatusCode(fasthttp.StatusNoContent) }}
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv.Serve(ln) //nolint:errcheck // ends with the listener
	}()
	b.Cleanup(func() {
		srv.Shutdown() //nolint:errcheck // the benchmark is over
		<-done
	})
	return "http://" + ln.Addr().String() + "/hook"
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru) //nolint:errcheck // linux always answers
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkPost posts one signed event at a time to a local receiver and
// reports the process's CPU per post (sender and receiver) besides ns/op.
func BenchmarkPost(b *testing.B) {
	url := benchReceiver(b)
	h := testHook(url, DefaultTimeout)
	c := newClient(context.Background(), h.cfg, url, 1)
	defer c.close()
	body := []byte(`{"type":"chat.message","timestamp":"2026-12-03T12:00:00Z","data":{"chat_id":"c1","seq":1,"event":{"id":"01J","chat":"c1","seq":1,"text":"` + strings.Repeat("x", 200) + `"}}}`)
	b.ReportAllocs()
	b.ResetTimer()
	cpu := cpuTime()
	for b.Loop() {
		if res := h.post(c, "msg_01J", body); res.err != nil {
			b.Fatal(res.err)
		}
	}
	b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N), "cpu-ns/op")
}
