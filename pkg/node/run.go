package node

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/chatd/chatd/pkg/changes"
	"github.com/chatd/chatd/pkg/push"
	"github.com/nats-io/nats.go/jetstream"
)

// stage is a group of components stopped together during shutdown.
type stage struct {
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func newStage() *stage {
	ctx, cancel := context.WithCancel(context.Background())
	return &stage{ctx: ctx, cancel: cancel}
}

func (s *stage) start(failed chan<- error, name string, run func(context.Context) error) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if err := run(s.ctx); err != nil {
			select {
			case failed <- fmt.Errorf("%s: %w", name, err):
			default:
			}
		}
	}()
}

func (s *stage) stop() {
	s.cancel()
	s.wg.Wait()
}

// Run starts the components, logs "chatd ready" once the node's consumer is
// live (when /readyz first says so), and serves until ctx ends or a
// component fails.
// Then it shuts down in the order that loses nothing: fail /readyz and wait
// Config.ShutdownDelay (everything still serving), stop taking sends and
// commit what is queued (ingest), stop the relay, push and reclaim, close
// every socket with a going-away frame and stop HTTP, delete the node's
// consumer when the nodes settle across each other (leaveStream), then the
// store and the embedded services.
// It returns the first component failure, or nil.
func (n *Node) Run(ctx context.Context) error {
	defer n.Close()
	failed := make(chan error, 8)
	web, accept, deliver := newStage(), newStage(), newStage()
	web.start(failed, "api", func(ctx context.Context) error { return n.API.Serve(ctx, n.ln) })
	accept.start(failed, "ingest", n.Ingest.Run)
	accept.start(failed, "reads", n.Reads.Run)
	deliver.start(failed, "relay", n.Relay.Run)
	deliver.start(failed, "push", n.Push.Run)
	deliver.start(failed, "reclaim", n.Reclaim.Run)
	deliver.start(failed, "webhooks", n.Webhooks.Run)
	if n.Notifier != nil {
		deliver.start(failed, "notifier", n.Notifier.Run)
		deliver.start(failed, "delivery positions", n.Recorder.Run)
	}
	if n.Changes != nil {
		deliver.start(failed, "chat changes", n.Changes.Run)
	}
	deliver.start(failed, "retention", n.pruneHistory)
	deliver.start(failed, "outbox stats", n.outboxStats.run)
	deliver.start(failed, "signals", n.Signals.Run)
	deliver.start(failed, "presence", n.Presence.Run)
	if n.cfg.DebugListen != "" {
		web.start(failed, "debug", n.serveDebug)
	}
	// Ready only once the node's consumer is live: until then /readyz is
	// 503 and WebSockets are refused, so a node that said "ready" at once
	// went not ready a moment later. HTTP is served from the start all the
	// same: a client that gave up on a connection queued while the node
	// started must meet a refusal, not a session that supersedes its next.
	var err error
	select {
	case <-n.Push.Live():
		n.log.Info("chatd ready", "url", n.URL(), "node", n.nodeID)
		if n.cfg.API.DevLogin {
			n.log.Warn("development login on (--dev-login): anyone who reaches this address can sign in as any user; turn it off on a server others can reach", "url", n.URL())
		}
		select {
		case <-ctx.Done():
		case err = <-failed:
		}
	case <-ctx.Done():
	case err = <-failed:
	}
	if err != nil {
		n.log.Error("component failed; shutting down", "err", err)
	}
	// Unready first: a load balancer stops sending new sockets while
	// everything still works, then (after the delay) ingest drains.
	n.API.Unready()
	n.log.Info("shutting down", "delay", n.cfg.ShutdownDelay)
	n.waitShutdownDelay()
	accept.stop()
	deliver.stop()
	web.stop()
	n.leaveStream()
	n.log.Info("stopped")
	return err
}

// leaveStream deletes this node's consumer once every socket is closed,
// when the nodes settle across each other: while it exists the others wait
// for this node's reports and publish every message, until JetStream
// removes it (push.Config.InactiveThreshold). Nothing needs it any more:
// its sessions are gone, and a node back under this id makes a new one
// that delivers only what is published after it.
func (n *Node) leaveStream() {
	if !n.cfg.settlesAcross() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	name := push.ConsumerName(n.nodeID)
	if err := n.js.DeleteConsumer(ctx, n.cfg.Stream.Name, name); err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
		n.log.Warn("delete this node's consumer; the other nodes publish every message until JetStream removes it", "consumer", name, "err", err)
	}
}

// waitShutdownDelay waits Config.ShutdownDelay. A second signal during it
// aborts the process (cmd/chatd restores the default signal action).
func (n *Node) waitShutdownDelay() {
	if n.cfg.ShutdownDelay <= 0 {
		return
	}
	t := time.NewTimer(n.cfg.ShutdownDelay)
	defer t.Stop()
	<-t.C
}

// pruneEvery is how often a node deletes history past its retention and
// chat changes past the changes stream's max age.
const pruneEvery = time.Hour

// pruneHistory prunes as the node starts and then every pruneEvery: a node
// restarted more often than that still deletes what its retention says.
func (n *Node) pruneHistory(ctx context.Context) error {
	t := time.NewTicker(pruneEvery)
	defer t.Stop()
	for {
		n.prune(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// prune deletes history past its retention, and the chat changes no
// endpoint took within the changes stream's max age. A failure is a
// warning (the next try is pruneEvery later), except at shutdown.
func (n *Node) prune(ctx context.Context) {
	deleted, err := n.Store.PruneHistory(ctx, n.cfg.HistoryRetention, time.Now())
	if ctx.Err() != nil {
		return
	}
	if err != nil {
		n.log.Warn("could not delete history past its retention; it stays until the next try (check PostgreSQL)", "next_try_in", pruneEvery, "err", err)
	} else if deleted > 0 {
		n.log.Info("pruned history past retention", "messages", deleted)
	}
	dropped, err := n.Store.PruneChanges(ctx, time.Now().Add(-changes.MaxAge))
	if ctx.Err() != nil {
		return
	}
	if err != nil {
		n.log.Warn("could not drop chat changes past the changes stream's max age; they stay until the next try (check PostgreSQL)", "next_try_in", pruneEvery, "err", err)
	} else if dropped > 0 {
		n.log.Warn("dropped chat changes no endpoint took within the changes stream's max age", "changes", dropped, "max_age", changes.MaxAge)
	}
}
