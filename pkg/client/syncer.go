package client

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/chatd/chatd"
)

// syncer pulls history for one session: every tracked chat once after hello
// (duty 3), then any chat whose gap was not filled live within GapWait. One
// goroutine fetches chats one after another, so a reconnect storm costs the
// server one history query per client at a time.
type syncer struct {
	s    *session
	wake chan struct{}

	mu    sync.Mutex
	due   map[string]dueFetch // chat → when (and whether) to fetch it
	fails map[string]int      // chat → consecutive failed fetches
	list  bool                // TrackAll: list the chats before anything else
}

// dueFetch is a scheduled history fetch. A fetch asked for by a gap is
// skipped if live frames closed the gap in the meantime: live frames often
// overtake each other by a few milliseconds, and fetching after every such
// reorder would cost the server a history query per reorder.
type dueFetch struct {
	at    time.Time
	ifGap bool
}

func newSyncer(s *session) *syncer {
	return &syncer{
		s:     s,
		wake:  make(chan struct{}, 1),
		due:   make(map[string]dueFetch),
		fails: make(map[string]int),
	}
}

// request schedules a fetch of chat after d, or sooner if one is already due
// sooner. The fetch happens only if chat still has a gap then.
func (y *syncer) request(chat string, d time.Duration) { y.schedule(chat, d, true) }

// schedule schedules a fetch of chat after d; ifGap makes it conditional on
// a gap at that time. An unconditional fetch already scheduled stays so.
func (y *syncer) schedule(chat string, d time.Duration, ifGap bool) {
	at := time.Now().Add(d)
	y.mu.Lock()
	cur, ok := y.due[chat]
	switch {
	case !ok:
		y.due[chat] = dueFetch{at: at, ifGap: ifGap}
	default:
		if at.Before(cur.at) {
			cur.at = at
		}
		cur.ifGap = cur.ifGap && ifGap
		y.due[chat] = cur
	}
	y.mu.Unlock()
	signal(y.wake)
}

// resyncAll schedules every tracked chat now (and the chat list first when
// Config.TrackAll is set).
func (y *syncer) resyncAll() {
	y.mu.Lock()
	y.list = y.s.c.cfg.TrackAll
	y.mu.Unlock()
	for _, chat := range y.s.c.tracker.list() {
		y.schedule(chat, 0, false)
	}
	signal(y.wake)
}

// run fetches due chats until ctx ends. It returns an error only when the
// token is refused, which must end the session.
func (y *syncer) run(ctx context.Context) error {
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		if err := y.listIfAsked(ctx); err != nil {
			return err
		}
		chats, next := y.takeDue(time.Now())
		for _, chat := range chats {
			if err := y.syncOne(ctx, chat); err != nil {
				return err
			}
		}
		if len(chats) > 0 {
			continue // fetching took time; look again before sleeping
		}
		t.Reset(next)
		select {
		case <-ctx.Done():
			return nil
		case <-y.wake:
		case <-t.C:
		}
	}
}

// takeDue removes and returns the chats due by now, and how long until the
// next one is due (an hour when none is scheduled).
func (y *syncer) takeDue(now time.Time) ([]string, time.Duration) {
	y.mu.Lock()
	defer y.mu.Unlock()
	var chats []string
	next := time.Hour
	for chat, f := range y.due {
		switch {
		case f.at.After(now):
			next = min(next, f.at.Sub(now))
		case f.ifGap && !y.s.c.tracker.hasGap(chat):
			delete(y.due, chat) // filled live in the meantime
		default:
			chats = append(chats, chat)
			delete(y.due, chat)
		}
	}
	return chats, next
}

func (y *syncer) listIfAsked(ctx context.Context) error {
	y.mu.Lock()
	list := y.list
	y.mu.Unlock()
	if !list {
		return nil
	}
	c := y.s.c
	chats, err := c.ListChats(ctx)
	switch {
	case err == nil:
		y.mu.Lock()
		y.list = false
		y.mu.Unlock()
		for _, chat := range c.trackListed(chats) {
			y.schedule(chat, 0, false)
		}
		return nil
	case errors.Is(err, ErrUnauthorized):
		return err
	case ctx.Err() != nil:
		return nil
	}
	c.log.Warn("list chats failed; retrying", "err", err)
	select {
	case <-ctx.Done():
	case <-time.After(c.backoff.delay(3)):
	}
	return nil
}

// syncOne fetches one chat's history from its resume point to the end and
// decides what follows: a gap still open (its frame arrived after our last
// page) is looked at again after GapWait; a transient failure is retried
// with backoff; a chat we may no longer read is untracked.
func (y *syncer) syncOne(ctx context.Context, chat string) error {
	c := y.s.c
	err := c.syncChat(ctx, chat)
	switch {
	case err == nil:
		y.mu.Lock()
		delete(y.fails, chat)
		y.mu.Unlock()
		if c.tracker.hasGap(chat) {
			y.request(chat, c.cfg.GapWait)
		}
		return nil
	case errors.Is(err, ErrUnauthorized):
		return err
	case ctx.Err() != nil:
		return nil
	case errors.Is(err, chatd.ErrForbidden), errors.Is(err, chatd.ErrNotFound):
		c.log.Warn("untracking chat we cannot read", "chat", chat, "err", err)
		c.tracker.untrack(chat)
		return nil
	}
	y.mu.Lock()
	n := y.fails[chat]
	y.fails[chat] = n + 1
	y.mu.Unlock()
	d := c.backoff.delay(n)
	c.log.Warn("history sync failed; retrying", "chat", chat, "in", d, "err", err)
	y.schedule(chat, d, false)
	return nil
}

// signal does a non-blocking send on a 1-buffered wake-up channel.
func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}
