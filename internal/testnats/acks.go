package testnats

import (
	"strings"
	"sync/atomic"
	"testing"

	"github.com/nats-io/nats.go"
)

// InProgressAcks counts, from now on, the in-progress acks ("+WPI") any
// client sends to deliveries of the named consumer, seen through nc. The
// returned function flushes nc (so acks sent before the call are counted)
// and reports the count. The subscription ends with t.
func InProgressAcks(t testing.TB, nc *nats.Conn, consumer string) func() int64 {
	t.Helper()
	var n atomic.Int64
	sub, err := nc.Subscribe("$JS.ACK.>", func(m *nats.Msg) {
		if strings.Contains(m.Subject, "."+consumer+".") && string(m.Data) == "+WPI" {
			n.Add(1)
		}
	})
	if err != nil {
		t.Fatalf("testnats: subscribe to acks: %v", err)
	}
	t.Cleanup(func() { sub.Unsubscribe() }) //nolint:errcheck // the connection may be closed first
	if err := nc.Flush(); err != nil {
		t.Fatalf("testnats: flush: %v", err)
	}
	return func() int64 {
		t.Helper()
		if err := nc.Flush(); err != nil {
			t.Fatalf("testnats: flush: %v", err)
		}
		return n.Load()
	}
}
