package push

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// The fast path's account of each message, for a relay that keeps settled
// messages out of the delivery stream (Config.Settle, stream.Settler).
//
// A message is settled on this node when the fast path handed its frame to
// every connection of its recipients registered at that moment, and each of
// those connections has since acked it or left live delivery (withdrawn,
// detached: its client resyncs from history). A connection registered after
// the fast path ran sent its `hello` after the commit, so the message is in
// the history that client reads on `hello` (docs/architecture.md, "Recover").
// So a settled message needs nothing the stream delivery would give it: no
// frame, no lease, no pin. When this node is alone no other node's
// connections need it either, and the relay may delete its outbox row
// without publishing it. That is invariant 2 as it stands: the entry goes
// only after every recipient connection acked it or was removed.
//
// Alone is proved, not assumed. The node only sets Config.Settle where no
// other node can join (docs/architecture.md, "Settled on one node"), and Run
// lists the stream's consumers every Config.AloneCheck besides (while a
// message waits for it; see watchAlone): a message
// reads settled only once a listing that began after its fast path found no
// consumer but this node's. Another node's session gets `hello` only after
// that node's consumer exists, so if it was registered before the message
// was committed, its consumer existed before that listing began and was
// seen; if it was registered later, its client reads the message from
// history. Any other consumer (an integration's, one made with the nats CLI)
// turns settling off the same way, for as long as it exists; except, while
// the relay publishes taken messages apart (Config.TakenPrefix), one that
// reads them or needs none of them (Config.TakenSkippers): nothing is kept
// from it.

// settling is the single-node settle state machine and the one owner of
// its state (docs/architecture.md, "Settled on one node", draws it): the
// node's proof of being alone, from the latest listing of the stream's
// consumers, and the fast path's account of each message. The node decides
// whether it runs at all (Config.Settle); the relay only asks Settled,
// publishes what does not read settled within its wait, and says when it is
// done (Forget). All fields are guarded by Registry.mu.
type settling struct {
	// on is Config.Settle: off, nothing is recorded and nothing reads
	// settled.
	on bool
	// local is the fast path's account of each message while the relay has
	// not finished with it; own counts those committed here (origin ""),
	// the ones the listings are for. Only keep and drop change either.
	local map[string]*localEntry
	own   int
	// aloneAt is when the latest listing that found no consumer but this
	// node's began; zero before the first such listing and while the
	// latest that answered found another. Only messages the fast path
	// handled before it may read settled.
	aloneAt time.Time
	// notAlone remembers the latest answer, to log only its changes.
	notAlone bool
	// peers are the other nodes whose consumers that listing found, with
	// Config.Peers: each must report a message settled (peers.go).
	peers []string
	// reports are the ids settled here of messages other nodes committed
	// and shared, by the node to report them to; skipped are the ids of
	// messages this node shared and kept out of the stream, to announce.
	// The reporter sends both.
	reports map[string][]string
	skipped []string
	// kick wakes the reporter when the first report or skipped id is
	// queued, and rode when a rider took all that was (ride.go).
	kick, rode chan struct{}
	// leading is whether this node's relay leads, with Config.Peers.
	leading bool
	// seen are the peers whose heartbeat was live at a listing that found
	// their consumer, in every listing since (fence.go): the zero time
	// while it is live, else when it was first found lapsed.
	seen map[string]time.Time
	// seeded is set once a listing since the relay started leading took
	// the presence's lapsed peers into seen (fence.go).
	seeded bool
	// dozing is set while watchAlone sleeps for want of a message to list
	// for; the fast path handling one of this node's clears it and sends
	// on wake.
	dozing bool
	wake   chan struct{}
}

// localEntry is one message the fast path handled.
type localEntry struct {
	// waiting counts the connections handed the frame that have neither
	// acked nor left.
	waiting int
	// missed is set when a registered recipient connection did not get the
	// frame (its queue was full): only the stream delivery reaches it.
	missed bool
	// offline is set when a recipient other than the sender had no
	// registered connection: settled, the message was still not taken
	// live by everyone (Settled's taken).
	offline bool
	// sessions got the frame; forget drops their fast entries once the
	// message is settled, since no stream delivery will come to do it.
	sessions []*session
	at       time.Time // when the fast path ran; Reap forgets it after FastMemory
	// origin is the node that committed and shared the message, when
	// another: the entry is reported to it once settled here (sent), and
	// dropped when that node says it kept the message out of the stream,
	// or when the stream delivers it after all (peers.go).
	origin string
	sent   bool
	// reported are the peers that reported the message settled on them.
	reported []string
}

func newSettling(on bool) settling {
	return settling{on: on, local: make(map[string]*localEntry), reports: make(map[string][]string),
		kick: make(chan struct{}, 1), rode: make(chan struct{}, 1),
		seen: make(map[string]time.Time), wake: make(chan struct{}, 1)}
}

// handled records what the fast path did with message id: handed to
// sessions, and missed a registered recipient connection or not.
func (st *settling) handled(id string, sessions []*session, missed, offline bool, now time.Time) {
	if !st.on {
		return
	}
	st.keep(id, &localEntry{waiting: len(sessions), missed: missed, offline: offline, sessions: sessions, at: now})
	if st.dozing {
		st.dozing = false
		select {
		case st.wake <- struct{}{}:
		default:
		}
	}
}

// done counts down message id for a connection that acked it or left live
// delivery before acking it. A shared message settled by it is reported.
func (st *settling) done(id string) {
	le := st.local[id]
	if le == nil {
		return
	}
	le.waiting--
	if le.origin != "" && !le.sent && le.settledHere() {
		st.report(id, le)
	}
}

// settledHere: the fast path reached every registered recipient connection,
// each of which has acked or left.
func (le *localEntry) settledHere() bool { return !le.missed && le.waiting <= 0 }

// settled: settled here, proved alone by a listing begun after the fast
// path ran, and reported settled by every peer that listing found.
func (st *settling) settled(id string) bool {
	le := st.local[id]
	if le == nil || le.origin != "" || !le.settledHere() || !le.at.Before(st.aloneAt) {
		return false
	}
	for _, p := range st.peers {
		if !slices.Contains(le.reported, p) {
			return false
		}
	}
	return true
}

// taken: the fast path found a connection of every recipient but the
// sender (asked of settled messages only).
func (st *settling) taken(id string) bool {
	le := st.local[id]
	return le != nil && !le.offline
}

// listed takes the answer of a listing of the stream's consumers that
// began at began, and reports whether it changed the node from alone to
// not alone (or back). A failed listing is not an answer: the state stays.
func (st *settling) listed(began time.Time, notAlone bool, peers []string) (changed bool) {
	changed = notAlone != st.notAlone
	st.notAlone = notAlone
	if notAlone {
		st.aloneAt = time.Time{}
	} else {
		st.aloneAt = began
	}
	st.peers = peers
	return changed
}

// unproven returns to the state before any listing answered: nothing
// reads settled until the next one (a node whose relay stopped leading).
// What its listings saw of the peers' heartbeats goes too: a peer's lapse
// is timed only over listings in a row.
func (st *settling) unproven() {
	st.aloneAt, st.notAlone, st.peers = time.Time{}, false, nil
	clear(st.seen)
	st.seeded = false
}

// forget drops the account of messages whose rows left the outbox (see
// Forget).
func (st *settling) forget(skipped, published []string) {
	// An entry is asked about only where its message was committed
	// (origin ""); a shared one leaves with its origin's notice (skippedBy),
	// its stream delivery, or Reap.
	for _, id := range published {
		st.drop(id)
	}
	for _, id := range skipped {
		le := st.drop(id)
		if le == nil {
			continue
		}
		for _, s := range le.sessions {
			delete(s.fast, id) // a no-op on a withdrawn session's nil map
		}
	}
}

// forgetBefore drops the account of messages handled before cutoff: a
// relay that stopped leading never asks about them.
func (st *settling) forgetBefore(cutoff time.Time) {
	for id, le := range st.local {
		if le.at.Before(cutoff) {
			st.drop(id)
		}
	}
}

// keep records le as message id's account, in place of any before.
func (st *settling) keep(id string, le *localEntry) {
	st.drop(id)
	st.local[id] = le
	if le.origin == "" {
		st.own++
	}
}

// drop forgets message id's account and returns it; nil if it had none.
func (st *settling) drop(id string) *localEntry {
	le := st.local[id]
	if le == nil {
		return nil
	}
	delete(st.local, id)
	if le.origin == "" {
		st.own--
	}
	return le
}

// Settled reports whether message id is settled on this node (see above),
// and, if so, whether it was taken: it reached a connection of every
// recipient but its sender (see Config.TakenPrefix). It is false for a
// message the fast path has not handled (yet), and for one no listing of
// the stream's consumers begun after its fast path has found this node
// alone (yet), so the relay publishes it after its wait, as it would
// without this check. Implements stream.Settler.
func (r *Registry) Settled(id string) (settled, taken bool) {
	r.mu.Lock()
	defer r.unlock()
	settled = r.settle.settled(id)
	return settled, settled && r.settle.taken(id)
}

// AloneCheckFor is Config.AloneCheck for a relay's settle wait: a message
// reads settled only after a listing begun after its fast path, so several
// listings must fit in the wait or acked messages would be published for
// want of one.
func AloneCheckFor(settleWait time.Duration) time.Duration {
	return max(settleWait/5, 5*time.Millisecond)
}

// watchAlone lists the stream's consumers every Config.AloneCheck while a
// message this node committed waits to read settled, until ctx ends. With
// none waiting it sleeps until the fast path handles one, and lists at
// once (a listing begun after that fast path, as the message needs), or
// until Config.IdleCheck passes: an idle node neither asks JetStream twenty
// times a second for a proof nothing needs nor wakes to find nothing to do.
// Run owns it.
func (r *Registry) watchAlone(ctx context.Context) {
	tick := time.NewTicker(r.cfg.AloneCheck)
	defer tick.Stop()
	quiet := time.NewTimer(r.cfg.IdleCheck)
	defer quiet.Stop()
	var str jetstream.Stream
	for {
		if r.lists() {
			str = r.checkAlone(ctx, str)
		}
		if !r.doze() {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			continue
		}
		tick.Stop()
		quiet.Reset(r.cfg.IdleCheck)
		select {
		case <-ctx.Done():
			return
		case <-r.settle.wake:
		case <-quiet.C:
		}
		tick.Reset(r.cfg.AloneCheck)
	}
}

// doze reports whether no message this node committed has an account (only
// such a message's needs the listings), and then marks watchAlone dozing,
// for the fast path to wake it.
func (r *Registry) doze() bool {
	r.mu.Lock()
	defer r.unlock()
	r.settle.dozing = r.settle.own == 0
	return r.settle.dozing
}

// checkAlone lists the stream's consumers once (looking the stream up
// first when str is nil) and records the answer; it returns the stream for
// the next listing. A listing that fails changes nothing: messages handled
// after the last good one wait for the next, and are published if none
// comes within the relay's wait. Listings run one at a time (watchAlone's,
// or a test's with Run's off): the fence times lapses over listings in a row.
func (r *Registry) checkAlone(ctx context.Context, str jetstream.Stream) jetstream.Stream {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.CheckInterval)
	defer cancel()
	began := r.cfg.Now()
	others, err := r.otherConsumers(ctx, &str)
	var peers []string
	if r.cfg.Peers {
		peers, others = splitPeers(others)
	}
	if err != nil {
		if ctx.Err() == nil {
			r.sampled.Warn("list the stream's consumers; keeping new messages in the stream meanwhile", "err", err)
		}
		return str
	}
	if r.cfg.Peers {
		peers = r.fenceDead(ctx, str, peers)
	}
	notAlone := len(others) > 0
	r.mu.Lock()
	changed := r.settle.listed(began, notAlone, peers)
	r.unlock()
	switch {
	case notAlone && changed:
		r.metrics.alone.Set(0)
		r.log.Info("another consumer reads the delivery stream; every message goes to the stream while it exists",
			"consumers", others)
	case !notAlone:
		r.metrics.alone.Set(1)
		if changed {
			r.log.Info("no consumer but the nodes' own reads the delivery stream; settling again", "peers", peers)
		}
	}
	return str
}

// otherConsumers names the stream's consumers other than this node's that
// end settling: every one, unless the relay publishes taken messages
// (Config.TakenPrefix); then those that read them, and the skippers that
// need none of them, do not.
func (r *Registry) otherConsumers(ctx context.Context, str *jetstream.Stream) ([]string, error) {
	if *str == nil {
		s, err := r.cfg.JS.Stream(ctx, r.cfg.Stream)
		if err != nil {
			return nil, fmt.Errorf("stream %s: %w", r.cfg.Stream, err)
		}
		*str = s
	}
	var others []string
	if r.cfg.TakenPrefix == "" {
		// Names only: every other consumer counts, and a listing of names
		// is the lighter call of the two, made every AloneCheck.
		names := (*str).ConsumerNames(ctx)
		for name := range names.Name() {
			if name != ConsumerName(r.cfg.NodeID) {
				others = append(others, name)
			}
		}
		if err := names.Err(); err != nil {
			return nil, fmt.Errorf("consumers of %s: %w", r.cfg.Stream, err)
		}
	} else {
		list := (*str).ListConsumers(ctx)
		for ci := range list.Info() {
			if ci.Name != ConsumerName(r.cfg.NodeID) && !r.readsTaken(ci) {
				others = append(others, ci.Name)
			}
		}
		if err := list.Err(); err != nil {
			return nil, fmt.Errorf("consumers of %s: %w", r.cfg.Stream, err)
		}
	}
	slices.Sort(others)
	return others, nil
}

// readsTaken reports whether a consumer gets what a settled message needs
// while the relay publishes taken messages: it reads their subjects, or
// it is one that needs none of them.
func (r *Registry) readsTaken(ci *jetstream.ConsumerInfo) bool {
	if slices.Contains(r.cfg.TakenSkippers, ci.Name) {
		return true
	}
	filters := ci.Config.FilterSubjects
	if ci.Config.FilterSubject != "" {
		filters = append(filters, ci.Config.FilterSubject)
	}
	if len(filters) == 0 {
		return true
	}
	// A chat id is one token, so a taken message's subject is the prefix
	// and one token more.
	return slices.ContainsFunc(filters, func(f string) bool { return subjectMatches(f, r.cfg.TakenPrefix+"c") })
}

// subjectMatches reports whether filter, with NATS's wildcards (* one
// token, > one or more at the end), matches the literal subject.
func subjectMatches(filter, subject string) bool {
	fs, ss := strings.Split(filter, "."), strings.Split(subject, ".")
	for i, f := range fs {
		if f == ">" {
			return len(ss) > i
		}
		if i >= len(ss) || (f != "*" && f != ss[i]) {
			return false
		}
	}
	return len(fs) == len(ss)
}

// Forget drops the account of messages the relay is done with (their rows
// left the outbox). skipped were never published: their connections' fast
// entries go too, since no stream delivery will come to clear them.
// published went to the stream, perhaps in an earlier round whose acks timed
// out: their fast entries stay, so the stream delivery neither re-sends the
// frame nor waits for an ack that already came. Implements stream.Settler.
func (r *Registry) Forget(skipped, published []string) {
	r.mu.Lock()
	defer r.unlock()
	r.settle.forget(skipped, published)
	if !r.cfg.Peers || len(skipped) == 0 {
		return
	}
	if len(r.settle.skipped)+len(skipped) > maxSkippedQueued {
		// The reporter has stopped (the node is closing, or could not
		// subscribe): the other nodes reap what they kept after FastMemory.
		r.sampled.Warn("skipped ids not announced to the other nodes: the reporter is not sending", "ids", len(skipped))
		return
	}
	r.settle.queueSkipped(skipped)
}
