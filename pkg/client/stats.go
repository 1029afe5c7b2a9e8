package client

import (
	"maps"
	"sync"
	"sync/atomic"
)

// Stats are the client's counters since New, for load tools and metrics.
type Stats struct {
	// MsgFrames counts `msg` frames received (each one is acked).
	MsgFrames int64
	// DuplicateFrames counts `msg` frames whose message was already held or
	// handed out (redeliveries, or live copies of what history brought).
	DuplicateFrames int64
	// DeliveredLive, DeliveredHistory and DeliveredSelf count messages handed
	// to the application, by how each arrived. Their sum is every message
	// handed out, each exactly once.
	DeliveredLive    int64
	DeliveredHistory int64
	DeliveredSelf    int64
	// HistoryPages counts history pages fetched; HistoryDuplicates the
	// messages on them that were already held or handed out.
	HistoryPages      int64
	HistoryDuplicates int64
	// SkippedSeqs counts seqs declared gone because history no longer holds
	// them (purged past retention).
	SkippedSeqs int64
	// AckFrames and AckedIDs count `ack` frames written and the ids in them.
	AckFrames int64
	AckedIDs  int64
	// SendFrames counts `send` frames written; Resends those that repeated a
	// cid after a reconnect. Accepted counts `accepted` answers.
	SendFrames int64
	Resends    int64
	Accepted   int64
	// Rejects counts `rejected` answers by code.
	Rejects map[string]int64
	// Connects counts sessions that reached `hello`; DialFailures the
	// attempts that did not (refused, timed out, no hello).
	Connects     int64
	DialFailures int64
	// Disconnects counts ended sessions and failed dials by close code
	// (0: the connection failed without a close frame).
	Disconnects map[int]int64
	// Held is the number of frames currently held behind gaps.
	Held int64
	// TokenRefreshes counts in-band token refreshes the server confirmed.
	TokenRefreshes int64
}

// counters is the live, concurrently updated form of Stats.
type counters struct {
	msgFrames, dupFrames                          atomic.Int64
	deliveredLive, deliveredHistory, deliveredOwn atomic.Int64
	historyPages, historyDups, skipped            atomic.Int64
	ackFrames, ackedIDs                           atomic.Int64
	sendFrames, resends, accepted                 atomic.Int64
	connects, dialFailures                        atomic.Int64
	tokenRefreshes                                atomic.Int64

	mu          sync.Mutex
	rejects     map[string]int64
	disconnects map[int]int64
}

func newCounters() *counters {
	return &counters{rejects: make(map[string]int64), disconnects: make(map[int]int64)}
}

func (c *counters) reject(code string) {
	c.mu.Lock()
	c.rejects[code]++
	c.mu.Unlock()
}

func (c *counters) disconnect(code int) {
	c.mu.Lock()
	c.disconnects[code]++
	c.mu.Unlock()
}

func (c *counters) delivered(via Via) {
	switch via {
	case ViaLive:
		c.deliveredLive.Add(1)
	case ViaHistory:
		c.deliveredHistory.Add(1)
	case ViaSelf:
		c.deliveredOwn.Add(1)
	}
}

func (c *counters) snapshot() Stats {
	s := Stats{
		MsgFrames:         c.msgFrames.Load(),
		DuplicateFrames:   c.dupFrames.Load(),
		DeliveredLive:     c.deliveredLive.Load(),
		DeliveredHistory:  c.deliveredHistory.Load(),
		DeliveredSelf:     c.deliveredOwn.Load(),
		HistoryPages:      c.historyPages.Load(),
		HistoryDuplicates: c.historyDups.Load(),
		SkippedSeqs:       c.skipped.Load(),
		AckFrames:         c.ackFrames.Load(),
		AckedIDs:          c.ackedIDs.Load(),
		SendFrames:        c.sendFrames.Load(),
		Resends:           c.resends.Load(),
		Accepted:          c.accepted.Load(),
		Connects:          c.connects.Load(),
		DialFailures:      c.dialFailures.Load(),
		TokenRefreshes:    c.tokenRefreshes.Load(),
	}
	c.mu.Lock()
	s.Rejects = maps.Clone(c.rejects)
	s.Disconnects = maps.Clone(c.disconnects)
	c.mu.Unlock()
	return s
}
