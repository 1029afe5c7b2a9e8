package signal

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/chatd/chatd"
	"github.com/nats-io/nats.go/jetstream"
)

// presenceOpTimeout bounds one bucket write and one audience lookup.
const presenceOpTimeout = 5 * time.Second

// presenceRetry is the pause before the bucket and its watch are set up
// again after NATS failed them.
const presenceRetry = time.Second

// Run keeps this node's entries in the bucket (put on a user's first local
// session, deleted on the last, refreshed every Refresh), watches everyone's,
// and delivers transitions until ctx ends; then it deletes this node's
// entries (its sessions are about to close) and returns nil once its
// notifier goroutine has. A failure to reach the bucket is retried, not
// returned: presence is best effort and must not stop the node.
func (p *Presence) Run(ctx context.Context) error {
	defer p.sampled.Flush()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); p.notify(ctx) }()
	defer wg.Wait()
	for {
		err := p.watch(ctx)
		if ctx.Err() != nil {
			return nil
		}
		p.sampled.Warn("presence unavailable; retrying", "err", err)
		t := time.NewTimer(presenceRetry)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
}

// watch sets up the bucket and its watch and serves them until ctx ends or
// the watch fails.
func (p *Presence) watch(ctx context.Context) error {
	kv, err := p.cfg.JS.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket: p.cfg.Bucket, TTL: p.cfg.TTL, History: 1, Replicas: p.cfg.Replicas,
		// Memory: presence is rebuilt within one refresh after a restart.
		Storage:     jetstream.MemoryStorage,
		Description: "chatd presence: <user>.<node> while the node holds a session of the user",
	})
	if err != nil {
		return fmt.Errorf("presence bucket: %w", err)
	}
	w, err := kv.WatchAll(ctx)
	if err != nil {
		return fmt.Errorf("watch presence: %w", err)
	}
	defer func() { _ = w.Stop() }()
	defer func() {
		if ctx.Err() != nil {
			p.withdraw(kv)
		}
	}()
	// Entries put while the watch was down are written now.
	p.refreshAll(ctx)

	refresh := time.NewTicker(p.cfg.Refresh)
	defer refresh.Stop()
	expire := time.NewTicker(min(p.cfg.TTL/10, 500*time.Millisecond))
	defer expire.Stop()
	initial := true
	for {
		select {
		case <-ctx.Done():
			return nil
		case e, ok := <-w.Updates():
			if !ok {
				return errors.New("presence watch ended")
			}
			if e == nil {
				initial = false
				continue
			}
			p.apply(e, initial)
		case <-p.wake:
			p.writePending(ctx, kv)
		case <-refresh.C:
			p.refreshAll(ctx)
		case <-expire.C:
			p.mu.Lock()
			changes := p.table.expire(p.cfg.Now())
			p.mu.Unlock()
			for _, c := range changes {
				p.emit(c)
			}
		}
	}
}

// apply feeds one watched entry to the table. A live update is timed by
// this node's clock (entries carry the server's, which may be skewed); an
// initial one by its creation, so a stale entry found at start expires on
// time.
func (p *Presence) apply(e jetstream.KeyValueEntry, initial bool) {
	user, node, ok := strings.Cut(e.Key(), ".")
	if !ok {
		return
	}
	at := p.cfg.Now()
	if initial && e.Created().Before(at) {
		at = e.Created()
	}
	p.mu.Lock()
	var c presenceChange
	var changed bool
	switch e.Operation() {
	case jetstream.KeyValuePut:
		c, changed = p.table.put(user, node, at)
	default: // delete or purge: a clean disconnect
		c, changed = p.table.remove(user, node, at)
	}
	p.mu.Unlock()
	if changed {
		p.emit(c)
	}
}

// emit queues a transition for its audience lookup; a full queue drops it.
func (p *Presence) emit(c presenceChange) {
	state := "offline"
	if c.Online {
		state = "online"
	}
	p.metrics.transitions.WithLabelValues(state).Inc()
	select {
	case p.changes <- c:
	default:
		p.metrics.dropped.Inc()
		p.sampled.Warn("presence transitions queue full; dropping", "user", c.User)
	}
}

// notify finds each transition's audience and delivers it to this node's
// connections, off the watch loop (a lookup is a database query).
func (p *Presence) notify(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case c := <-p.changes:
			lctx, cancel := context.WithTimeout(ctx, presenceOpTimeout)
			to, err := p.cfg.Contacts(lctx, c.User, p.cfg.Audience)
			cancel()
			if err != nil {
				p.metrics.dropped.Inc()
				p.sampled.Warn("presence audience", "user", c.User, "err", err)
				continue
			}
			p.cfg.Deliver(chatd.Signal{Kind: chatd.SignalPresence, User: c.User, Online: c.Online, LastSeen: c.LastSeen, To: to})
			if !c.Online {
				p.recordLastSeen(ctx, c)
			}
		}
	}
}

// recordLastSeen stores an offline transition's time. Every node that sees
// the transition records it (a dead node's users have nobody else to); the
// store keeps the latest, so the repeats are harmless.
func (p *Presence) recordLastSeen(ctx context.Context, c presenceChange) {
	if p.cfg.LastSeen == nil || c.LastSeen.IsZero() {
		return
	}
	rctx, cancel := context.WithTimeout(ctx, presenceOpTimeout)
	defer cancel()
	if err := p.cfg.LastSeen.RecordLastSeen(rctx, c.User, c.LastSeen); err != nil && ctx.Err() == nil {
		p.sampled.Warn("record last seen", "user", c.User, "err", err)
	}
}

// writePending puts or deletes the entries of users whose local sessions
// changed, as they stand now.
func (p *Presence) writePending(ctx context.Context, kv jetstream.KeyValue) {
	p.mu.Lock()
	ops := make(map[string]bool, len(p.pending))
	for u := range p.pending {
		ops[u] = p.local[u]
	}
	clear(p.pending)
	p.mu.Unlock()
	for u, on := range ops {
		p.write(ctx, kv, u, on)
	}
}

// refreshWindow is how many refresh puts are in flight at once.
const refreshWindow = 256

// refreshAll puts every local user's entry again, restarting its TTL.
//
// The puts are pipelined, refreshWindow at a time, and each window waits
// for its acks. One synchronous Put per user took 0.9-2.0 s for 10,000 users
// on a loaded 2-core box, every 2.5 s, and the watch loop that runs this
// handled nothing else meanwhile: transitions and local connects waited,
// and a slower refresh would have let entries expire.
func (p *Presence) refreshAll(ctx context.Context) {
	p.mu.Lock()
	users := make([]string, 0, len(p.local))
	for u := range p.local {
		users = append(users, u)
	}
	p.mu.Unlock()
	futures := make([]jetstream.PubAckFuture, 0, min(len(users), refreshWindow))
	owners := make([]string, 0, cap(futures))
	for len(users) > 0 {
		n := min(len(users), refreshWindow)
		futures, owners = futures[:0], owners[:0]
		for _, u := range users[:n] {
			f, err := p.pub.PublishAsync(p.subject(u), presenceOn)
			if err != nil {
				p.writeFailed(ctx, u, true, err)
				continue
			}
			futures, owners = append(futures, f), append(owners, u)
		}
		users = users[n:]
		for i, f := range futures {
			select {
			case <-f.Ok():
			case err := <-f.Err():
				p.writeFailed(ctx, owners[i], true, err)
			case <-ctx.Done():
				return
			}
		}
	}
}

// presenceOn is the value of an entry: its presence is what counts.
var presenceOn = []byte{'1'}

// subject is the bucket's subject for user's entry on this node: what a KV
// Put publishes to (the bucket is this account's own, without a JetStream
// domain or API prefix).
func (p *Presence) subject(user string) string {
	return "$KV." + p.cfg.Bucket + "." + p.key(user)
}

func (p *Presence) write(ctx context.Context, kv jetstream.KeyValue, user string, on bool) {
	wctx, cancel := context.WithTimeout(ctx, presenceOpTimeout)
	defer cancel()
	var err error
	if on {
		_, err = kv.Put(wctx, p.key(user), presenceOn)
	} else {
		err = kv.Delete(wctx, p.key(user))
	}
	if err != nil {
		p.writeFailed(ctx, user, on, err)
	}
}

// writeFailed counts and logs a failed write of user's entry, unless ctx
// ended (shutdown).
func (p *Presence) writeFailed(ctx context.Context, user string, on bool, err error) {
	if ctx.Err() != nil {
		return
	}
	p.metrics.writeErrors.Inc()
	p.sampled.Warn("presence write", "user", user, "online", on, "err", err)
}

// withdraw deletes this node's entries on shutdown, so its users go offline
// now rather than after the TTL.
func (p *Presence) withdraw(kv jetstream.KeyValue) {
	p.mu.Lock()
	users := make([]string, 0, len(p.local))
	for u := range p.local {
		users = append(users, u)
	}
	p.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), presenceOpTimeout)
	defer cancel()
	for _, u := range users {
		if err := kv.Delete(ctx, p.key(u)); err != nil {
			p.log.Debug("withdraw presence", "user", u, "err", err)
			return
		}
	}
}
