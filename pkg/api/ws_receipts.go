package api

import (
	"context"
	"sync"

	"github.com/chatd/chatd"
)

// maxPendingReads bounds the chats whose read state a session holds unsaved.
const maxPendingReads = 256

// readMarker stores a session's read receipts off the read loop (a store
// write per frame would stall acks behind it). Frames for the same chat
// coalesce to the latest; one drain goroutine at a time writes them, and
// the session waits for it before it ends.
type readMarker struct {
	s *session

	mu      sync.Mutex
	pending map[string]string // chat → upto
	running bool
	wg      sync.WaitGroup
}

// mark records a read position; false when too many chats are pending.
func (m *readMarker) mark(chat, upto string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.pending == nil {
		m.pending = make(map[string]string)
	}
	if _, ok := m.pending[chat]; !ok && len(m.pending) >= maxPendingReads {
		return false
	}
	m.pending[chat] = upto
	if !m.running {
		m.running = true
		m.wg.Add(1)
		go m.drain()
	}
	return true
}

func (m *readMarker) wait() { m.wg.Wait() }

func (m *readMarker) drain() {
	defer m.wg.Done()
	for {
		m.mu.Lock()
		batch := m.pending
		m.pending = nil
		if len(batch) == 0 {
			m.running = false
			m.mu.Unlock()
			return
		}
		m.mu.Unlock()
		for chat, upto := range batch {
			m.store(chat, upto)
		}
	}
}

// store saves one read position (durable, through the group commit of read
// state), then hands the receipt to the signal path, its one fan-out: every
// node, this one included, offers it to its live sessions of the chat's
// members except the reading device (best effort: receipts are live-only by
// contract). The members come from the member cache, not a query per
// receipt, and travel in the signal, so no receiving node looks them up. The receipt
// carries the position stored, not the frame's: after a stale or reordered
// `read` of an older message, the other devices must not be told the chat
// went back to unread.
func (m *readMarker) store(chat, upto string) {
	s := m.s
	cfg := s.g.cfg
	ctx, cancel := context.WithTimeout(context.Background(), cfg.StoreTimeout)
	defer cancel()
	pos, err := cfg.Chats.MarkRead(ctx, s.id.User, chat, upto)
	if err != nil {
		code, status := errorCode(err)
		if status < 500 {
			s.reject("", code, err.Error())
		} else {
			s.g.srv.sampled.Warn("store read state", "chat", chat, "err", err)
		}
		return
	}
	s.abuse.carriedOut()
	members, err := s.g.srv.members.members(ctx, chat, s.id.User)
	if err != nil {
		s.logger().Debug("receipt fan-out: load chat", "chat", chat, "err", err)
		return
	}
	sig := chatd.Signal{
		Kind: chatd.SignalReceipt, Chat: chat, User: s.id.User, SkipDevice: s.id.Device,
		Upto: pos.Upto, Seq: pos.Seq, To: members,
	}
	if err := s.g.srv.signals().Publish(sig); err != nil {
		s.g.srv.sampled.Warn("publish receipt", "chat", chat, "err", err)
	}
}
