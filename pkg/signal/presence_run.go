package signal

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/chatd/chatd"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// presenceOpTimeout bounds one bucket write and one audience lookup.
const presenceOpTimeout = 5 * time.Second

// presenceRetry is the pause before the bucket and its watch are set up
// again after NATS failed them.
const presenceRetry = time.Second

// Run keeps this node's heartbeat and entries in the bucket (an entry put
// on a user's first local session, deleted on the last; the heartbeat
// rewritten every Refresh), watches everyone's, and delivers transitions
// until ctx ends; then it deletes this node's heartbeat and entries (its
// sessions are about to close) and returns nil once its notifier goroutine
// has. A failure to reach the bucket is retried, not returned: presence is
// best effort and must not stop the node.
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

// markerTTL is how long the bucket keeps a deleted key's marker, and a
// heartbeat's own time to live: the TTL, at least the server's 1 s minimum.
func (p *Presence) markerTTL() time.Duration { return max(p.cfg.TTL, time.Second) }

// watch sets up the bucket and its watch and serves them until ctx ends or
// the watch fails.
func (p *Presence) watch(ctx context.Context) error {
	kv, err := p.cfg.JS.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket: p.cfg.Bucket, History: 1, Replicas: p.cfg.Replicas,
		// No bucket-wide TTL: entries live until deleted. Heartbeats carry
		// their own TTL, and deletes leave markers that expire, so neither
		// piles up (this needs NATS 2.11 or later).
		LimitMarkerTTL: p.markerTTL(),
		// Memory: presence is rebuilt within one refresh after a restart.
		Storage:     jetstream.MemoryStorage,
		Description: "chatd presence: n.<node> heartbeats, u.<user>.<node> while the node holds a session of the user",
	})
	if errors.Is(err, jetstream.ErrLimitMarkerTTLNotSupported) {
		return fmt.Errorf("presence bucket: the NATS server has no per-key TTLs; presence needs NATS 2.11 or later: %w", err)
	}
	if err != nil {
		return fmt.Errorf("presence bucket: %w", err)
	}
	w, err := kv.WatchAll(ctx)
	if err != nil {
		return fmt.Errorf("watch presence: %w", err)
	}
	defer stopWatch(w)
	defer func() {
		if ctx.Err() != nil {
			p.withdraw()
		}
	}()
	// The heartbeat goes first, so no watcher sees an entry of this run
	// before the run itself. The entries written before this watch follow
	// its initial load, those the bucket lacks: their put failed while the
	// watch was down, or a NATS restart lost the bucket. The ones that
	// pending holds go out through it as usual.
	restore := p.unqueued()
	p.mu.Lock()
	p.table.reload()
	p.mu.Unlock()
	p.beat(ctx)
	beatCtx, stopBeats := context.WithCancel(ctx)
	var beats sync.WaitGroup
	beats.Add(1)
	go func() { defer beats.Done(); p.beatEvery(beatCtx) }()
	defer beats.Wait()
	defer stopBeats()

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
				p.mu.Lock()
				changes := p.table.loaded(p.cfg.Now())
				p.mu.Unlock()
				for _, c := range changes {
					p.emit(c)
				}
				p.putAll(ctx, restore)
				restore = nil
				continue
			}
			if initial {
				p.noteOwn(e, restore)
			}
			p.apply(e, initial)
		case <-p.wake:
			p.writePending(ctx)
		case <-expire.C:
			if p.retryDue(p.cfg.Now()) {
				p.writePending(ctx)
			}
			if len(w.Updates()) > 0 {
				// Behind the bucket: a heartbeat that looks lapsed may be
				// waiting in the channel. Judge at a tick that finds it
				// drained.
				continue
			}
			p.mu.Lock()
			changes := p.table.expire(p.cfg.Now())
			var stale []staleEntry
			if !initial && p.table.cleaner(p.cfg.NodeID) {
				stale = p.table.stale()
			}
			p.mu.Unlock()
			for _, c := range changes {
				p.emit(c)
			}
			p.cleanUp(ctx, stale)
		}
	}
}

// stopWatch stops w and drains what it still delivers until the library
// closes its channel (bounded by presenceOpTimeout). The library's callback
// sends on a buffered channel under a lock that its close also takes: one
// blocked on a full channel (this node's own deletes at shutdown fill it)
// would otherwise stay blocked for good, and with it the subscription's
// goroutine.
func stopWatch(w jetstream.KeyWatcher) {
	_ = w.Stop()
	t := time.NewTimer(presenceOpTimeout)
	defer t.Stop()
	for {
		select {
		case _, ok := <-w.Updates():
			if !ok {
				return
			}
		case <-t.C:
			return
		}
	}
}

// apply feeds one watched key to the table. A live update is timed by
// this node's clock (entries carry the server's, which may be skewed); an
// initial one by its creation, so a stale heartbeat found at start lapses
// on time.
func (p *Presence) apply(e jetstream.KeyValueEntry, initial bool) {
	user, node, isBeat, ok := parseKey(e.Key())
	if !ok {
		return
	}
	at := p.cfg.Now()
	if initial && e.Created().Before(at) {
		at = e.Created()
	}
	put := e.Operation() == jetstream.KeyValuePut // else a delete, a purge or an expiry
	p.mu.Lock()
	var changes []presenceChange
	switch {
	case isBeat && put:
		changes = p.table.beat(node, string(e.Value()), at)
	case isBeat:
		// A delete is a node's goodbye (withdraw); a purge the bucket's
		// expiry of a heartbeat whose TTL ran out.
		changes = p.table.gone(node, at, e.Operation() == jetstream.KeyValuePurge)
	case put:
		if c, changed := p.table.putEntry(user, node, string(e.Value()), e.Revision(), at); changed {
			changes = append(changes, c)
		}
	default:
		if c, changed := p.table.removeEntry(user, node, at); changed {
			changes = append(changes, c)
		}
		// One of this node's entries deleted while the user is still here
		// (a clean-up that took this node for dead while it was cut off):
		// put it back.
		if node == p.cfg.NodeID && p.local[user] {
			p.pending[user] = struct{}{}
			p.signalWake()
		}
	}
	p.mu.Unlock()
	for _, c := range changes {
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
// changed, as they stand now, pipelined: a connection storm puts thousands
// at once, and the watch loop that runs this handles nothing else
// meanwhile.
func (p *Presence) writePending(ctx context.Context) {
	p.mu.Lock()
	users := make([]string, 0, len(p.pending))
	msgs := make([]*nats.Msg, 0, len(p.pending))
	for u := range p.pending {
		users = append(users, u)
		if p.local[u] {
			msgs = append(msgs, p.putMsg(u))
		} else {
			// A purge whose marker expires: a deleted entry leaves nothing
			// behind for long, however many users come and go.
			msgs = append(msgs, p.purgeMsg(p.key(u)))
		}
	}
	clear(p.pending)
	p.mu.Unlock()
	p.pipeline(ctx, msgs, func(i int, err error) {
		p.writeFailed(ctx, users[i], msgs[i].Header.Get(kvOperationHeader) == "", err)
	})
}

// putMsg is the put of user's entry, naming this run.
func (p *Presence) putMsg(user string) *nats.Msg {
	m := nats.NewMsg(p.subject(p.key(user)))
	m.Data = []byte(p.inc)
	return m
}

// beatEvery writes this node's heartbeat every Refresh until ctx ends. It
// has its own goroutine so that nothing the watch loop waits for (a burst
// of entries to write, a slow server) can delay a beat past the TTL and
// take this node's users offline.
func (p *Presence) beatEvery(ctx context.Context) {
	t := time.NewTicker(p.cfg.Refresh)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			p.beat(ctx)
		}
	}
}

// beat writes this node's heartbeat, which expires on its own after the
// TTL unless written again.
func (p *Presence) beat(ctx context.Context) {
	bctx, cancel := context.WithTimeout(ctx, presenceOpTimeout)
	defer cancel()
	m := nats.NewMsg(p.subject(p.beatKey()))
	m.Data = []byte(p.inc)
	if _, err := p.pub.PublishMsg(bctx, m, jetstream.WithMsgTTL(p.markerTTL())); err != nil && ctx.Err() == nil {
		p.metrics.writeErrors.Inc()
		p.sampled.Warn("could not write this node's presence heartbeat; if none succeeds within the TTL the cluster takes its users offline (check NATS)", "ttl", p.cfg.TTL, "err", err)
	}
}

// unqueued returns the local users whose entries pending does not hold:
// written before, by this run, and perhaps lost since.
func (p *Presence) unqueued() map[string]struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	users := make(map[string]struct{}, len(p.local))
	for u := range p.local {
		if _, queued := p.pending[u]; !queued {
			users[u] = struct{}{}
		}
	}
	return users
}

// noteOwn drops from users the user of e when e is an entry of this
// node's run: the bucket holds it, and putAll need not write it again.
func (p *Presence) noteOwn(e jetstream.KeyValueEntry, users map[string]struct{}) {
	user, node, isBeat, ok := parseKey(e.Key())
	if ok && !isBeat && node == p.cfg.NodeID && e.Operation() == jetstream.KeyValuePut && string(e.Value()) == p.inc {
		delete(users, user)
	}
}

// putAll puts the entries of users (found missing from the bucket by the
// watch's initial load) who are still connected and whose entry pending
// does not hold (a session that began or ended meanwhile writes it).
// Rewriting entries the bucket holds would cost a write and a watch
// update on every node per user at each restart of this node's watch, and
// writing one pending holds would write it twice.
func (p *Presence) putAll(ctx context.Context, users map[string]struct{}) {
	p.mu.Lock()
	put := make([]string, 0, len(users))
	for u := range users {
		if _, queued := p.pending[u]; p.local[u] && !queued {
			put = append(put, u)
		}
	}
	p.mu.Unlock()
	msgs := make([]*nats.Msg, len(put))
	for i, u := range put {
		msgs[i] = p.putMsg(u)
	}
	p.pipeline(ctx, msgs, func(i int, err error) { p.writeFailed(ctx, put[i], true, err) })
}

// cleanUp deletes entries no live node's run stands behind (their node
// died, or restarted without them), each only if it is still the revision
// the table saw: an entry its node has written again since stays.
func (p *Presence) cleanUp(ctx context.Context, stale []staleEntry) {
	if len(stale) == 0 {
		return
	}
	msgs := make([]*nats.Msg, len(stale))
	for i, s := range stale {
		msgs[i] = p.purgeMsg(entryKeyPrefix + s.user + "." + s.node)
		msgs[i].Header.Set(jetstream.ExpectedLastSubjSeqHeader, strconv.FormatUint(s.rev, 10))
	}
	p.pipeline(ctx, msgs, func(int, error) {}) // lost a race with a rewrite, or retried at the next death
	p.log.Info("presence: deleted entries of nodes gone", "entries", len(stale))
}

// The KV operation header and its values, as the library writes them (it
// does not export them): watchers see KeyValuePurge and KeyValueDelete.
const (
	kvOperationHeader = "KV-Operation"
	kvPurge           = "PURGE"
	kvDelete          = "DEL"
)

// purgeMsg is a purge of key whose marker expires after markerTTL.
func (p *Presence) purgeMsg(key string) *nats.Msg {
	m := nats.NewMsg(p.subject(key))
	m.Header.Set(kvOperationHeader, kvPurge)
	m.Header.Set(jetstream.MsgRollup, jetstream.MsgRollupSubject)
	m.Header.Set(jetstream.MsgTTLHeader, p.markerTTL().String())
	return m
}

// refreshWindow is how many pipelined writes are in flight at once.
const refreshWindow = 256

// pipeline publishes msgs refreshWindow at a time, each window waiting for
// its acks, and calls failed with the index of each that failed.
//
// One synchronous write per user took 0.9-2.0 s for 10,000 users on a
// loaded 2-core box, and the watch loop that runs this handles nothing
// else meanwhile: transitions and local connects would wait.
func (p *Presence) pipeline(ctx context.Context, msgs []*nats.Msg, failed func(i int, err error)) {
	futures := make([]jetstream.PubAckFuture, 0, min(len(msgs), refreshWindow))
	index := make([]int, 0, cap(futures))
	for start := 0; start < len(msgs); start += refreshWindow {
		futures, index = futures[:0], index[:0]
		for i := start; i < min(start+refreshWindow, len(msgs)); i++ {
			f, err := p.pub.PublishMsgAsync(msgs[i])
			if err != nil {
				failed(i, err)
				continue
			}
			futures, index = append(futures, f), append(index, i)
		}
		for k, f := range futures {
			select {
			case <-f.Ok():
			case err := <-f.Err():
				failed(index[k], err)
			case <-ctx.Done():
				return
			}
		}
	}
}

// subject is the bucket's subject for a key: what a KV Put publishes to
// (the bucket is this account's own, without a JetStream domain or API
// prefix).
func (p *Presence) subject(key string) string {
	return "$KV." + p.cfg.Bucket + "." + key
}

// writeFailed counts and logs a failed write of user's entry and queues it
// again for presenceRetry later (as the user's sessions then stand),
// unless ctx ended (shutdown). Without the retry, a put lost to a bucket
// leader election would leave the user offline for the rest of a session
// whose entry nothing else rewrites, and a lost delete online after it.
func (p *Presence) writeFailed(ctx context.Context, user string, on bool, err error) {
	if ctx.Err() != nil {
		return
	}
	p.metrics.writeErrors.Inc()
	p.sampled.Warn("presence write; will retry", "user", user, "online", on, "err", err)
	p.mu.Lock()
	p.pending[user] = struct{}{}
	if p.retryAt.IsZero() {
		p.retryAt = p.cfg.Now().Add(presenceRetry)
	}
	p.mu.Unlock()
}

// retryDue reports whether failed writes wait in pending and their retry
// time has come, and if so clears it (a write failing again sets it anew).
func (p *Presence) retryDue(now time.Time) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.retryAt.IsZero() || now.Before(p.retryAt) {
		return false
	}
	p.retryAt = time.Time{}
	return len(p.pending) > 0
}

// withdraw deletes this node's heartbeat on shutdown, so its users go
// offline everywhere now rather than after the TTL, then its entries, so
// the bucket keeps nothing of this run (best effort: the next run's
// clean-up, or another node's, deletes what is left).
func (p *Presence) withdraw() {
	ctx, cancel := context.WithTimeout(context.Background(), presenceOpTimeout)
	defer cancel()
	bye := p.purgeMsg(p.beatKey())
	bye.Header.Set(kvOperationHeader, kvDelete) // a goodbye, not an expiry
	bye.Header.Del(jetstream.MsgRollup)
	if _, err := p.pub.PublishMsg(ctx, bye); err != nil {
		p.log.Debug("withdraw presence heartbeat", "err", err)
		return
	}
	p.mu.Lock()
	msgs := make([]*nats.Msg, 0, len(p.local))
	for u := range p.local {
		msgs = append(msgs, p.purgeMsg(p.key(u)))
	}
	p.mu.Unlock()
	p.pipeline(ctx, msgs, func(int, error) {})
}
