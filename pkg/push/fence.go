package push

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// A node that dies without stopping in order (a kill, a crash, its machine
// lost) leaves its consumer on the stream, and the leading node waits for
// its reports in vain: every message goes to the stream until JetStream
// removes the consumer after Config.InactiveThreshold. The leading node
// fences such a node once the cluster's presence has taken it for dead for
// Config.FenceAfter (its heartbeat, seen live while its consumer was
// listed, lapsed in a current view, and stayed so): it deletes the node's
// consumer, and the next listings no longer name it as a peer. The wait
// spares a live node whose heartbeat is late now and then (a refresh set
// near the TTL on one node, a slow bucket).
//
// That is safe whatever the node's state. Dead, it has no sessions. Alive
// but unable to write its heartbeat for the presence TTL, its next check
// that JetStream answers finds the consumer gone: it withdraws every
// session and makes a new one, as after an operator's delete (and one that
// JetStream does not answer closes its sessions after Config.Unreachable).
// Its clients reconnect and read from history what they missed meanwhile.
// A node that never beat (the presence of another layout) is never fenced,
// nor is one whose consumer left a listing (it stopped in order, or was
// fenced) until it is seen alive again.
//
// A node that died before this one led was never seen alive in its
// listings. The presence remembers a heartbeat it saw lapse
// (Config.PeerLapsed), and the first listing after the relay starts leading
// counts such a peer as seen alive until its last beat: fenced FenceAfter
// after that. Only that first listing does, so a live node that cannot
// write its heartbeat is fenced at most once per lead, not at every
// listing after its consumer comes back.

// fenceDead deletes the consumers of the peers fenced now, and returns
// peers without them. It changes nothing while the presence view is not
// current.
func (r *Registry) fenceDead(ctx context.Context, str jetstream.Stream, peers []string) []string {
	if r.cfg.PeerAlive == nil {
		return peers
	}
	// The presence is asked what it saw lapse only for the seed, once per
	// lead, and outside r.mu like PeerAlive.
	r.mu.Lock()
	gather := r.cfg.PeerLapsed != nil && !r.settle.seeded
	r.unlock()
	listed := make(map[string]bool, len(peers))
	var lapsedAt map[string]time.Time
	var dead []string
	for _, p := range peers {
		alive, current := r.cfg.PeerAlive(p)
		if !current {
			return peers
		}
		listed[p] = alive
		if !gather || alive {
			continue
		}
		if at, ok := r.cfg.PeerLapsed(p); ok {
			if lapsedAt == nil {
				lapsedAt = make(map[string]time.Time)
			}
			lapsedAt[p] = at
		}
	}
	now := r.cfg.Now()
	r.mu.Lock()
	for p := range r.settle.seen {
		if _, ok := listed[p]; !ok {
			delete(r.settle.seen, p) // its consumer left: seen anew when back
		}
	}
	// A lead lost and taken again since the gathering leaves the seed to
	// the next listing.
	seed := gather && !r.settle.seeded
	if gather {
		r.settle.seeded = true
	}
	for p, alive := range listed {
		lapsed, seen := r.settle.seen[p]
		if at, ok := lapsedAt[p]; ok && seed && !seen {
			// Dead before this node led: the presence saw it lapse.
			lapsed, seen = at, true
			r.settle.seen[p] = at
		}
		switch {
		case alive:
			r.settle.seen[p] = time.Time{}
		case !seen:
		case lapsed.IsZero():
			r.settle.seen[p] = now
		case now.Sub(lapsed) >= r.cfg.FenceAfter:
			dead = append(dead, p)
		}
	}
	r.unlock()
	if len(dead) == 0 {
		return peers
	}
	live := make([]string, 0, len(peers))
	for _, p := range peers {
		if !slices.Contains(dead, p) || !r.fence(ctx, str, p) {
			live = append(live, p)
		}
	}
	return live
}

// fence deletes p's consumer and reports whether it is gone.
func (r *Registry) fence(ctx context.Context, str jetstream.Stream, p string) bool {
	if err := str.DeleteConsumer(ctx, ConsumerName(p)); err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
		r.sampled.Warn("delete the consumer of a node the cluster takes for dead; its reports are still awaited", "peer", p, "err", err)
		return false
	}
	r.mu.Lock()
	delete(r.settle.seen, p)
	r.unlock()
	r.metrics.fenced.Inc()
	r.log.Warn("node's presence heartbeat lapsed: deleted its consumer, so the other nodes settle without its reports; if it is alive it withdraws its sessions and makes a new one",
		"peer", p, "consumer", ConsumerName(p))
	return true
}
