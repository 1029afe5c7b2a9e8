package api

import (
	"context"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/pkg/wire"
)

// Signaler carries typing and receipt signals to every node of the cluster,
// this one included, whose gateway then gets them through Server.Signal.
// *signal.Bus implements it (the node wires it). Publish must not block.
type Signaler interface {
	Publish(sig chatd.Signal) error
}

// Presence is the cluster's presence as the gateway feeds and REST reads
// it. *signal.Presence implements it (the node wires it).
type Presence interface {
	// Connected: user's first session on this node registered for live
	// delivery. Called under the registry's lock (so a user's connects and
	// disconnects arrive in order); it must not block.
	Connected(user string)
	// Disconnected: user's last session on this node left live delivery.
	// As Connected.
	Disconnected(user string)
	// Lookup returns what viewer may know of each user, in order: only
	// users who share a chat with viewer (as live presence) show online or
	// last_seen. It may read the stored last_seen of users this node has
	// not seen go offline.
	Lookup(ctx context.Context, viewer string, users []string) ([]chatd.Presence, error)
}

// localSignals is the Signaler of a Server without Config.Signals: signals
// reach only this node's connections (one node, or tests of the API alone).
type localSignals struct{ s *Server }

func (l localSignals) Publish(sig chatd.Signal) error {
	l.s.Signal(sig)
	return nil
}

// Signal hands an incoming signal to this node's live connections of the
// users in sig.To, skipping sig.SkipDevice of sig.User (the device that
// sent the `read`). Best effort: a connection whose queue is full misses
// it. It does not block; safe for concurrent use.
func (s *Server) Signal(sig chatd.Signal) {
	var frame []byte
	kind := string(sig.Kind)
	switch sig.Kind {
	case chatd.SignalTyping:
		frame = wire.AppendTyping(nil, sig.Chat, sig.User)
	case chatd.SignalReceipt:
		frame = wire.AppendReceipt(nil, sig.Chat, sig.User, sig.Upto, sig.Seq)
	case chatd.SignalPresence:
		frame = wire.AppendPresence(nil, sig.User, sig.Online, sig.LastSeen)
	default:
		return
	}
	for _, conn := range s.gw.sessionsOf(sig.To...) {
		if sig.SkipDevice != "" && conn.id.User == sig.User && conn.id.Device == sig.SkipDevice {
			continue
		}
		conn.offer(frame, kind)
	}
}

// signals is where this server publishes signals.
func (s *Server) signals() Signaler {
	if s.cfg.Signals == nil {
		return localSignals{s}
	}
	return s.cfg.Signals
}
