package client

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/chatd/chatd"
)

// Client is a chatd connection that keeps the client's side of the wire
// contract. Create it with New, consume Events, and call Run once; Run
// connects, resyncs, and reconnects until its context ends or Close is
// called. Safe for concurrent use.
type Client struct {
	cfg     Config
	log     *slog.Logger
	eps     []endpoint   // Config.URL, then Config.URLs
	cur     atomic.Int64 // index into eps of the node dialled last
	backoff backoff
	tracker *tracker
	stats   *counters
	events  chan Event

	// ownsHTTP: the REST client was made here (its own connection pool),
	// so Run and Close close its idle connections when the client stops.
	ownsHTTP bool

	started atomic.Bool
	closeMu sync.Once
	closed  chan struct{} // closed by Close
	// stopping is closed when Run's context ends (or Close is called):
	// only then may a message the tracker took go unhanded.
	stopping chan struct{}
	runDone  chan struct{} // closed when Run returns

	// deliverMu serialises tracker.add with the hand-off of what it makes
	// ready, so that two producers (the reader and the history syncer) can
	// never interleave one chat's messages out of seq order.
	deliverMu sync.Mutex
	ready     []entry // guarded by deliverMu; reused by every deliver
	// early holds live messages of untracked chats until the first listing
	// says where each chat starts (TrackStart other than StartAtBeginning);
	// handed out at once, such a message would track its chat from seq 0 and
	// replay its history. Nil once listed. Guarded by deliverMu.
	early  []chatd.Message
	listed bool // the first listing is done; guarded by deliverMu

	// mu guards the current session and the channel that announces the next.
	mu      sync.Mutex
	sess    *session      // nil while disconnected
	sessUp  chan struct{} // closed when a session reaches hello
	pending map[string]*pending

	// pendings holds answered sends' pending records for reuse (newPending).
	pendings sync.Pool
}

// New checks cfg and returns a Client; it does not connect (Run does).
func New(cfg Config) (*Client, error) {
	eps, err := endpointList(&cfg)
	if err != nil {
		return nil, err
	}
	if cfg.Token == "" && cfg.TokenFunc == nil {
		return nil, fmt.Errorf("config: Token or TokenFunc is required")
	}
	ownsHTTP := cfg.HTTPClient == nil
	cfg.setDefaults()
	c := &Client{
		cfg:      cfg,
		ownsHTTP: ownsHTTP,
		log:      cfg.Logger,
		eps:      eps,
		backoff:  backoff{min: cfg.BackoffMin, max: cfg.BackoffMax},
		tracker:  newTracker(cfg.MaxHeld),
		stats:    newCounters(),
		events:   make(chan Event, cfg.EventBuffer),
		closed:   make(chan struct{}),
		stopping: make(chan struct{}),
		runDone:  make(chan struct{}),
		sessUp:   make(chan struct{}),
		pending:  make(map[string]*pending),
	}
	for _, chat := range cfg.Chats {
		c.tracker.track(chat, 0)
	}
	return c, nil
}

// Events returns the event stream: per chat, every message exactly once in
// seq order, plus connection states and read receipts. Run closes it when it
// returns. The channel holds Config.EventBuffer events; when it is full the
// client stops reading from the connection until there is room
// (backpressure): acks then stop too, and a consumer that stalls long enough
// is closed by the server (4000/4001) and resynced from history after the
// reconnect. Nothing is lost, but keep up with the stream.
func (c *Client) Events() <-chan Event { return c.events }

// Stats returns a snapshot of the counters.
func (c *Client) Stats() Stats {
	s := c.stats.snapshot()
	s.Held = int64(c.tracker.heldCount())
	return s
}

// Track starts tracking chat from seq 0; see TrackFrom.
func (c *Client) Track(chat string) { c.TrackFrom(chat, 0) }

// TrackFrom tracks chat as if every seq up to afterSeq had been handed out
// (e.g. a resume point the application persisted), and syncs it from there
// at once when connected. A chat already tracked keeps its resume point:
// moving it would hand out or skip messages behind the application's back.
func (c *Client) TrackFrom(chat string, afterSeq int64) {
	if !c.tracker.track(chat, afterSeq) {
		return
	}
	if s := c.session(); s != nil {
		s.syncer.schedule(chat, 0, false)
	}
}

// Untrack stops syncing chat and drops what is held for it. A later `msg`
// frame of the chat tracks it again from seq 0.
func (c *Client) Untrack(chat string) { c.tracker.untrack(chat) }

// Tracked returns the tracked chats, sorted.
func (c *Client) Tracked() []string { return c.tracker.list() }

// Position returns chat's highest contiguous seq handed out (the resume
// point to persist), and whether chat is tracked.
func (c *Client) Position(chat string) (int64, bool) { return c.tracker.contiguous(chat) }

// Close stops Run (which closes the connection cleanly) and waits for it to
// return; pending sends return chatd.ErrClosed. It is safe to call more than
// once, and before Run.
func (c *Client) Close() error {
	c.closeMu.Do(func() { close(c.closed) })
	if c.started.Load() {
		<-c.runDone
	}
	c.closeIdleHTTP()
	return nil
}

// closeIdleHTTP closes the idle keep-alive connections of a REST client this
// Client made, so a stopped client leaves no connection (and no server-side
// goroutine waiting on it) behind. A caller's own HTTPClient is left alone.
func (c *Client) closeIdleHTTP() {
	if c.ownsHTTP {
		c.cfg.HTTPClient.CloseIdleConnections()
	}
}

// maxKeptReady bounds the ready buffer deliver keeps between calls.
const maxKeptReady = 64

// deliver offers msgs to the tracker and hands what becomes ready to the
// application in order. It reports how many were duplicates. It returns
// early, dropping the rest, only when Run is stopping. It must not stop
// when just the session that read msgs ends (a 4001, a 1001 mid-resync):
// the tracker already counts a ready message as handed out, so one dropped
// here would be skipped for good, neither re-fetched nor re-sent.
func (c *Client) deliver(msgs []chatd.Message, via Via) (dups int) {
	c.deliverMu.Lock()
	defer c.deliverMu.Unlock()
	for _, m := range msgs {
		if c.holdEarly(m, via) {
			continue
		}
		ready, dup := c.tracker.add(c.ready[:0], m, via)
		if dup {
			dups++
		}
		ok := c.handOut(ready)
		clear(ready) // hold no message past its hand-out
		c.ready = ready[:0]
		if cap(ready) > maxKeptReady {
			c.ready = nil // a long run released from behind a gap is not kept
		}
		if !ok {
			return dups
		}
	}
	return dups
}

// holdEarly keeps m back when it is live, its chat untracked, and the first
// listing of a TrackStart other than the beginning not yet done; deliverMu
// must be held.
func (c *Client) holdEarly(m chatd.Message, via Via) bool {
	if c.listed || !c.cfg.TrackAll || c.cfg.TrackStart == StartAtBeginning || via != ViaLive {
		return false
	}
	if _, tracked := c.tracker.contiguous(m.Chat); tracked {
		return false
	}
	c.early = append(c.early, m)
	return true
}

// trackListed tracks the chats of a listing: those of the first where
// TrackStart says, later ones from their beginning. After the first it
// hands out the live messages held for it, and reports which chats are new.
func (c *Client) trackListed(chats []chatd.UserChat) []string {
	c.deliverMu.Lock()
	first := !c.listed
	// A live message held for the listing came after hello: it is "now",
	// even when the listing, read later, already counts it in LastSeq.
	heldFrom := map[string]int64{}
	for _, m := range c.early {
		if f, ok := heldFrom[m.Chat]; !ok || m.Seq < f {
			heldFrom[m.Chat] = m.Seq
		}
	}
	var fresh []string
	for _, ch := range chats {
		after := int64(0)
		if first {
			after = c.cfg.TrackStart.after(ch)
			if f, ok := heldFrom[ch.ID]; ok && f-1 < after {
				after = f - 1
			}
		}
		if c.tracker.track(ch.ID, after) {
			fresh = append(fresh, ch.ID)
		}
	}
	c.listed = true
	early := c.early
	c.early = nil
	c.deliverMu.Unlock()
	if len(early) > 0 {
		c.deliver(early, ViaLive)
	}
	return fresh
}

// handOut pushes ready messages to Events, waiting for room (backpressure)
// until Run stops; deliverMu must be held.
func (c *Client) handOut(ready []entry) bool {
	for _, e := range ready {
		select {
		case c.events <- Event{Kind: EventMessage, Message: e.msg, Via: e.via}:
		case <-c.stopping:
			return false
		}
		c.stats.delivered(e.via)
	}
	return true
}

// emit blocks until ev is queued or ctx ends.
func (c *Client) emit(ctx context.Context, ev Event) bool {
	select {
	case c.events <- ev:
		return true
	case <-ctx.Done():
		return false
	}
}

// endpoint is the node dialled last (and so the one REST calls go to).
func (c *Client) endpoint() endpoint { return c.eps[c.cur.Load()] }

// nextEndpoint moves to the next node in the list, for the next dial.
// Only Run's loop calls it, so a load and a store need no compare-and-swap.
func (c *Client) nextEndpoint() {
	if len(c.eps) > 1 {
		c.cur.Store((c.cur.Load() + 1) % int64(len(c.eps)))
	}
}

// session returns the live session, or nil.
func (c *Client) session() *session {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sess
}
