package push

import (
	"sync"

	"github.com/nats-io/nats.go"
)

// follower holds this node's subscriptions to the shares and the skipped
// announcements (peers.go) while another node leads, and none while this
// one does: only the leading node shares (node's onCommit), so its own
// copies, which core NATS echoes back to it, would be read, decoded as far
// as their header and thrown away. A share missed while the lead moves
// leaves its messages unsettled, and the stream delivers them.
type follower struct {
	mu   sync.Mutex
	on   bool // between runPeers's start and its end
	subs []*nats.Subscription
}

// start lets sync subscribe, and subscribes unless this node leads. False
// when a subscription was refused (the connection closed): nothing is
// settled across nodes then, and the stream delivers every message.
func (f *follower) start(r *Registry) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.on = true
	return f.syncLocked(r)
}

// stop drops the subscriptions for good.
func (f *follower) stop() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.on = false
	f.dropLocked()
}

// sync subscribes or unsubscribes as the lead now stands; Lead calls it
// after each change.
func (f *follower) sync(r *Registry) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.on {
		f.syncLocked(r)
	}
}

func (f *follower) syncLocked(r *Registry) bool {
	r.mu.Lock()
	leading := r.settle.leading
	r.unlock()
	if leading {
		f.dropLocked()
		return true
	}
	if f.subs != nil {
		return true
	}
	for subject, handle := range map[string]nats.MsgHandler{
		r.cfg.FastSubject:    r.onShared,
		r.cfg.SkippedSubject: r.onSkipped,
	} {
		s, err := r.cfg.Conn.Subscribe(subject, handle)
		if err != nil {
			r.log.Warn(subscribeFailed, "subject", subject, "err", err)
			f.dropLocked()
			return false
		}
		f.subs = append(f.subs, s)
	}
	return true
}

func (f *follower) dropLocked() {
	for _, s := range f.subs {
		_ = s.Unsubscribe()
	}
	f.subs = nil
}
