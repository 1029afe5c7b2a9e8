package push

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"time"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/pkg/codec"
	"github.com/nats-io/nats.go"
)

// Settling across nodes (Config.Peers; docs/architecture.md, "Settled across
// nodes"). The node that commits a message (the one whose relay leads, as
// the others forward their sends to it) shares it with the other nodes over
// core NATS right after the commit, and each runs its fast path for its own
// connections and keeps the same account as for its own commits. Once the
// message is settled there (every connection handed the frame acked it or
// left, and none refused it) the node reports its id back. The committing
// node's relay reads a message settled only when it is settled there and
// every peer, every other node whose consumer a listing begun after the
// fast path found, reported it. The argument is the one node's: a session
// registered before the commit was registered when its node took the
// shared message, so that node's fast path reached it; one registered
// later reads the message from history after its `hello`; and a node gets
// sessions only once its consumer exists, so a node that had sessions at
// the commit is in the listing. Whatever goes wrong (a share or a report
// lost, a peer that does not report, such as one of an older build, or a
// consumer other than the nodes') leaves the message unsettled, and the
// relay publishes it after its wait, as it would without settling.

// nodeHeader names the node a share or a report comes from.
const nodeHeader = "Chatd-Node"

// subscribeFailed is the warning for a subscription settling across nodes
// needs and NATS refused.
const subscribeFailed = "subscribe for settling across nodes; every message goes to the stream"

// DefaultReportGather is Config.ReportGather's default and its most.
const DefaultReportGather = 20 * time.Millisecond

// maxSkippedQueued bounds the skipped ids queued for the reporter; at
// thousands of messages a second it gathers a few hundred.
const maxSkippedQueued = 1 << 16

// ReportGatherFor is Config.ReportGather for a relay's settle wait: long
// enough that a node sends a report every few tens of milliseconds rather
// than one per acked message (each NATS message costs both nodes far more
// than an id in it), short enough that a report reaches the committing
// node well within the wait, or the message would be published for want
// of it.
func ReportGatherFor(settleWait time.Duration) time.Duration {
	return min(max(settleWait/10, time.Millisecond), DefaultReportGather)
}

// splitPeers separates the nodes' consumers among names into the peers'
// node ids and the rest.
func splitPeers(names []string) (peers, others []string) {
	for _, name := range names {
		if node, ok := strings.CutPrefix(name, ConsumerPrefix); ok {
			peers = append(peers, node)
		} else {
			others = append(others, name)
		}
	}
	return peers, others
}

// handledFor records what the fast path did with a message origin shared,
// and reports it at once when it is already settled here (in a pair, the
// nodes without its recipient). An entry with sessions stays until origin
// says what became of the message (skippedBy), so that a stream delivery
// after all finds their fast entries and sends no frame twice.
func (st *settling) handledFor(origin, id string, sessions []*session, missed bool, now time.Time) {
	le := &localEntry{waiting: len(sessions), missed: missed, sessions: sessions, at: now, origin: origin}
	if le.settledHere() {
		st.report(id, le)
		return
	}
	st.keep(id, le)
}

// report queues id for its origin.
func (st *settling) report(id string, le *localEntry) {
	le.sent = true
	st.wakeReporter()
	st.reports[le.origin] = append(st.reports[le.origin], id)
}

// queueSkipped queues ids, which this node shared and kept out of the
// stream, for the reporter to announce.
func (st *settling) queueSkipped(ids []string) {
	st.wakeReporter()
	st.skipped = append(st.skipped, ids...)
}

// wakeReporter kicks the reporter when nothing is queued yet: it gathers
// from the first id on.
func (st *settling) wakeReporter() { st.signalEmpty(st.kick) }

// signalEmpty signals on ch, without waiting, while nothing is queued for
// the reporter.
func (st *settling) signalEmpty(ch chan struct{}) {
	if st.queued() {
		return
	}
	select {
	case ch <- struct{}{}:
	default:
	}
}

// skippedBy drops the entries of the messages origin kept out of the
// stream, with their sessions' fast entries: no stream delivery will come
// to clear them.
func (st *settling) skippedBy(origin string, ids []string) {
	for _, id := range ids {
		le := st.local[id]
		if le == nil || le.origin != origin {
			continue
		}
		st.drop(id)
		for _, s := range le.sessions {
			delete(s.fast, id) // a no-op on a withdrawn session's nil map
		}
	}
}

// deliveredShared drops the entry of a shared message the stream delivers
// after all: the delivery takes over its sessions' fast entries.
func (st *settling) deliveredShared(id string) {
	if le := st.local[id]; le != nil && le.origin != "" {
		st.drop(id)
	}
}

// reported records that peer has settled the messages ids, committed here.
func (st *settling) reported(peer string, ids []string) {
	for _, id := range ids {
		if le := st.local[id]; le != nil && le.origin == "" && !slices.Contains(le.reported, peer) {
			le.reported = append(le.reported, peer)
		}
	}
}

// Share sends the messages this node just committed to the other nodes, for
// their fast paths (Config.Peers; a no-op without). Its relay must lead:
// only it asks whether they are settled.
func (r *Registry) Share(envs []chatd.Envelope) {
	if !r.cfg.Peers || len(envs) == 0 {
		return
	}
	// A batch of a large room's messages, each naming every member, can
	// outgrow NATS's max payload: it goes in as many messages as it needs
	// (each envelope alone fits, ingest refuses larger ones).
	limit := int(r.cfg.Conn.MaxPayload()) - shareHeaderRoom - RiderRoom
	buf := r.shareBufs.Get().(*[]byte)
	data := (*buf)[:0]
	first := true
	for i := range envs {
		start := len(data)
		var err error
		if data, err = codec.AppendEnvelope(data, &envs[i]); err != nil {
			// The relay will encode it too, and say so; without a share the
			// message is merely not settled.
			r.sampled.Warn("encode a message to share with the other nodes", "id", envs[i].Message.ID, "err", err)
			continue
		}
		if start > 0 && len(data)+1 > limit {
			r.publishShare(data[:start], first)
			first = false
			data = data[:copy(data, data[start:])]
		}
		// An encoded envelope is JSON without a raw newline.
		data = append(data, '\n')
	}
	if len(data) > 0 {
		r.publishShare(data, first)
	}
	// PublishMsg copied the data; a buffer grown by a large room's batch
	// goes to the collector rather than stay pooled.
	if cap(data) <= maxPooledShare {
		*buf = data[:0]
		r.shareBufs.Put(buf)
	}
}

// maxPooledShare is the largest share buffer kept for the next commit.
const maxPooledShare = 1 << 20

// shareHeaderRoom is what a share's subject and header take of NATS's max
// payload, with room to spare.
const shareHeaderRoom = 1024

// publishShare publishes one piece of a share; the first takes the queued
// skipped ids along (ride.go).
func (r *Registry) publishShare(data []byte, first bool) {
	msg := &nats.Msg{Subject: r.cfg.FastSubject, Header: nats.Header{nodeHeader: []string{r.cfg.NodeID}}, Data: data}
	if first {
		r.attachSkipped(msg.Header)
	}
	if err := r.cfg.Conn.PublishMsg(msg); err != nil {
		r.sampled.Warn("share committed messages with the other nodes", "err", err)
	}
}

// Lead tells the registry whether this node's relay leads (Config.Peers):
// only then does anything ask whether a message is settled here, so only
// then does Run list the stream's consumers, and only while it does not
// lead does it take the shares (follow.go). A node that stops leading
// forgets what the listings proved; it proves it again when it leads.
func (r *Registry) Lead(leading bool) {
	r.mu.Lock()
	r.settle.leading = leading
	if !leading {
		r.settle.unproven()
		r.metrics.alone.Set(0)
	}
	r.unlock()
	r.follow.sync(r)
}

// lists reports whether Run's listing is needed now: always alone, and
// across nodes while the relay leads.
func (r *Registry) lists() bool {
	if !r.cfg.Peers {
		return true
	}
	r.mu.Lock()
	defer r.unlock()
	return r.settle.leading
}

// onSkipped takes another node's announcement of the messages it kept out
// of the stream.
func (r *Registry) onSkipped(msg *nats.Msg) {
	if origin, ids, ok := r.fromPeer(msg); ok {
		r.mu.Lock()
		defer r.unlock()
		r.settle.skippedBy(origin, ids)
	}
}

// fromPeer reads a report or an announcement publishIDs sent: the node it
// came from and its ids. Not ok for one without a node, or from this one.
func (r *Registry) fromPeer(msg *nats.Msg) (node string, ids []string, ok bool) {
	node = msg.Header.Get(nodeHeader)
	if node == "" || node == r.cfg.NodeID {
		return "", nil, false
	}
	return node, strings.Split(string(msg.Data), "\n"), true
}

// onShared runs the fast path for messages another node shared.
func (r *Registry) onShared(msg *nats.Msg) {
	origin := msg.Header.Get(nodeHeader)
	if origin == "" || origin == r.cfg.NodeID {
		return
	}
	for line := range bytes.SplitSeq(msg.Data, []byte{'\n'}) {
		if len(line) == 0 {
			continue
		}
		env, err := codec.DecodeEnvelope(line)
		if err != nil || env.Message.ID == "" {
			r.sampled.Warn("undecodable message shared by another node; it is delivered from the stream", "peer", origin, "err", err)
			continue
		}
		env.Message.Device = env.Device
		if r.cfg.Seen != nil {
			r.cfg.Seen(&env) // as for the stream's envelopes, which a settled message never becomes
		}
		r.metrics.shared.Inc()
		r.fastPath(&env.Message, env.Recipients, fastShared, origin)
	}
	r.skippedRode(origin, msg.Header)
}

// onReport takes a report sent to this node.
func (r *Registry) onReport(msg *nats.Msg) {
	if peer, ids, ok := r.fromPeer(msg); ok {
		r.mu.Lock()
		defer r.unlock()
		r.settle.reported(peer, ids)
	}
}

// runPeers takes the other nodes' shares and reports, and sends this
// node's reports, until ctx ends. Run owns it.
func (r *Registry) runPeers(ctx context.Context) {
	// A subscription refused (the connection closed) leaves every message
	// unsettled: the stream delivers them.
	reports, err := r.cfg.Conn.Subscribe(r.cfg.SettledPrefix+r.cfg.NodeID, r.onReport)
	if err != nil {
		r.log.Warn(subscribeFailed, "subject", r.cfg.SettledPrefix+r.cfg.NodeID, "err", err)
		return
	}
	defer func() { _ = reports.Unsubscribe() }()
	defer r.follow.stop()
	if !r.follow.start(r) {
		return
	}
	t := time.NewTimer(time.Hour)
	t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.settle.kick:
		}
		send, ok := r.gather(ctx, t)
		if !ok {
			return
		}
		if send {
			r.sendReports()
		}
	}
}

// gather waits out the reporter's gathering, from the first id queued, and
// says whether to send; not ok when ctx ends. A rider that took everything
// queued (ride.go) ends it early with nothing to send, and ids queued since
// then gather afresh.
func (r *Registry) gather(ctx context.Context, t *time.Timer) (send, ok bool) {
	t.Reset(r.cfg.ReportGather)
	for {
		select {
		case <-ctx.Done():
			return false, false
		case <-t.C:
			return true, true
		case <-r.settle.rode:
			select {
			case <-r.settle.kick: // from an id queued after the take: gathered from here
			default:
			}
			r.mu.Lock()
			queued := r.settle.queued()
			r.unlock()
			if !queued {
				t.Stop()
				return false, true
			}
			t.Reset(r.cfg.ReportGather)
		}
	}
}

// sendReports sends the queued reports, one message per origin, and the
// queued skipped ids in one announcement: the other nodes then drop what
// they kept for a stream delivery that will not come.
func (r *Registry) sendReports() {
	r.mu.Lock()
	var reports map[string][]string // the queue's own map only once swapped out: it is read unlocked below
	if len(r.settle.reports) > 0 {
		reports = r.settle.reports
		r.settle.reports = make(map[string][]string, len(reports))
	}
	skipped := r.settle.skipped
	r.settle.skipped = nil
	r.unlock()
	for origin, ids := range reports {
		if err := r.publishIDs(r.cfg.SettledPrefix+origin, ids); err != nil {
			r.sampled.Warn("report settled messages", "peer", origin, "err", err)
			continue
		}
		r.metrics.reports.Add(float64(len(ids)))
	}
	if len(skipped) > 0 {
		if err := r.publishIDs(r.cfg.SkippedSubject, skipped); err != nil {
			r.sampled.Warn("announce the messages kept out of the stream", "err", err)
		}
	}
}

// publishIDs publishes ids, one per line, from this node.
func (r *Registry) publishIDs(subject string, ids []string) error {
	return r.cfg.Conn.PublishMsg(&nats.Msg{Subject: subject, Header: nats.Header{nodeHeader: []string{r.cfg.NodeID}},
		Data: []byte(strings.Join(ids, "\n"))})
}
