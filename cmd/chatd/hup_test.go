package main

import (
	"context"
	"io"
	"log/slog"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

type countingReloader struct{ n atomic.Int32 }

func (c *countingReloader) ReloadTLS() error { c.n.Add(1); return nil }

// SIGHUP reloads the certificate, once per signal, and the handler stops
// with its context (so the process's SIGHUP is its own again).
func TestSIGHUPReloadsTLS(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	r := &countingReloader{}
	done := reloadTLSOnHUP(ctx, r, slog.New(slog.NewTextHandler(io.Discard, nil)))
	for want := int32(1); want <= 2; want++ {
		if err := syscall.Kill(syscall.Getpid(), syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(5 * time.Second)
		for r.n.Load() < want {
			if time.Now().After(deadline) {
				t.Fatalf("reloads after SIGHUP %d: got %d, want %d", want, r.n.Load(), want)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the SIGHUP handler did not stop with its context")
	}
}
