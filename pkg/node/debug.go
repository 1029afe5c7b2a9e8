package node

import (
	"context"
	"errors"
	"net/http"
	"net/http/pprof"
	"time"
)

// serveDebug serves Go's profiler on DebugListen (never on the public
// listener: profiles expose internals) until ctx ends. It leaves out
// /debug/pprof/cmdline, which would show a secret given as a flag
// (--jwt-secret, a --database-url with a password) to anyone who reaches
// the listener; the index still links it, and it answers 404.
func (n *Node) serveDebug(ctx context.Context) error {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	ln := n.debugLn
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		<-ctx.Done()
		shut, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(shut)
	}()
	err := srv.Serve(ln)
	<-done
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}
