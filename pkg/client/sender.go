package client

import (
	"context"
	"fmt"
	"time"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/pkg/wire"
	"github.com/oklog/ulid/v2"
)

// Accepted is chatd's durable acceptance of a send: the message is stored
// with this id and seq.
type Accepted struct {
	Chat string
	CID  string
	ID   string
	Seq  int64
	TS   time.Time
}

// pending is a send waiting for its answer, across reconnects.
type pending struct {
	cid, chat, body string
	result          chan sendResult  // 1-buffered; answered at most once
	frame           wire.ClientFrame // what is (re)sent: a send or an event
}

type sendResult struct {
	acc Accepted
	err error
}

// Send sends body to chat with a fresh cid (a ULID); see SendCID.
func (c *Client) Send(ctx context.Context, chat, body string) (Accepted, error) {
	return c.SendCID(ctx, chat, ulid.Make().String(), body)
}

// SendCID sends body to chat under the caller's cid and waits for the
// answer. It waits for a connection and for a free send credit (hello's
// `credits`) rather than overrun the server. If the connection drops before
// the answer, the same frame is resent on the next connection; the server
// stores a cid once, so the message is never duplicated. A `rejected`
// answer returns a *RejectedError. When ctx ends first, the outcome is
// unknown: call SendCID again with the same cid to learn it. After Close,
// or once Run has returned, it returns an error wrapping chatd.ErrClosed.
func (c *Client) SendCID(ctx context.Context, chat, cid, body string) (Accepted, error) {
	return c.submit(ctx, wire.ClientFrame{Type: wire.FrameSend, Chat: chat, CID: cid, Body: body})
}

// submit writes f (a send or an event frame) and waits for its answer,
// resending the same frame on every new connection until answered: the
// server stores a cid once, so the contract's resend rule covers events too.
func (c *Client) submit(ctx context.Context, f wire.ClientFrame) (Accepted, error) {
	chat, cid := f.Chat, f.CID
	if chat == "" || cid == "" {
		return Accepted{}, fmt.Errorf("%s: chat and cid are required: %w", f.Type, chatd.ErrInvalid)
	}
	p := c.newPending()
	p.cid, p.chat, p.body, p.frame = cid, chat, f.Body, f
	if err := c.addPending(p); err != nil {
		return Accepted{}, err
	}
	answered := false
	defer func() {
		c.dropPending(p)
		if answered {
			c.recycle(p)
		}
	}()

	written := false
	for {
		select {
		case r := <-p.result:
			answered = true
			return c.finish(p, r)
		default:
		}
		s, err := c.awaitSession(ctx)
		if err != nil {
			return Accepted{}, err
		}
		if err := s.acquire(ctx, cid); err == errSessionDone {
			continue
		} else if err != nil {
			return Accepted{}, fmt.Errorf("send %s: %w", cid, err)
		}
		if err := s.write(&p.frame); err == nil {
			c.stats.sendFrames.Add(1)
			if written {
				c.stats.resends.Add(1)
			}
			written = true
		}
		// A failed write closed the connection: wait for the session to end
		// and resend on the next one.
		select {
		case r := <-p.result:
			answered = true
			return c.finish(p, r)
		case <-s.done:
		case <-ctx.Done():
			return Accepted{}, fmt.Errorf("send %s: %w", cid, ctx.Err())
		}
	}
}

func (c *Client) finish(p *pending, r sendResult) (Accepted, error) {
	r.acc.Chat = p.chat
	return r.acc, r.err
}

// recycle keeps p, answered and out of pending, for reuse. Nothing else
// refers to it any more: the reader took it out of pending before
// answering, a pending is answered once, and its channel is empty again.
func (c *Client) recycle(p *pending) {
	*p = pending{result: p.result}
	c.pendings.Put(p)
}

// newPending returns an empty pending with an empty result channel,
// reused when one is free: a send per delivery made the channel and the
// pending a large part of what chatload allocates.
func (c *Client) newPending() *pending {
	if p, ok := c.pendings.Get().(*pending); ok {
		return p
	}
	return &pending{result: make(chan sendResult, 1)}
}

// awaitSession returns the live session, waiting for one if needed.
func (c *Client) awaitSession(ctx context.Context) (*session, error) {
	for {
		c.mu.Lock()
		s, up := c.sess, c.sessUp
		c.mu.Unlock()
		if s != nil {
			return s, nil
		}
		select {
		case <-up:
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-c.closed:
			return nil, errRunStopped
		case <-c.runDone:
			return nil, errRunStopped
		}
	}
}

func (c *Client) addPending(p *pending) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.pending[p.cid]; ok {
		return fmt.Errorf("send %s: %w", p.cid, ErrPending)
	}
	c.pending[p.cid] = p
	return nil
}

func (c *Client) dropPending(p *pending) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pending[p.cid] == p {
		delete(c.pending, p.cid)
	}
}

// take removes and returns the send waiting on cid, or nil when no send
// waits (it gave up, or this is a second answer). The caller must answer
// it, and must not use it after: the answered send reuses it.
func (c *Client) take(cid string) *pending {
	c.mu.Lock()
	p := c.pending[cid]
	delete(c.pending, cid)
	c.mu.Unlock()
	return p
}

// answer hands r to the send waiting on cid, if any.
func (c *Client) answer(cid string, r sendResult) {
	if p := c.take(cid); p != nil {
		p.result <- r
	}
}

// Read sends a read receipt: this user has read chat up to message upto.
// Receipts are best effort; without a live connection it returns
// ErrNotConnected.
func (c *Client) Read(ctx context.Context, chat, upto string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s := c.session()
	if s == nil {
		return fmt.Errorf("read receipt: %w", ErrNotConnected)
	}
	if err := s.write(&wire.ClientFrame{Type: wire.FrameRead, Chat: chat, Upto: upto}); err != nil {
		return fmt.Errorf("read receipt: %w", err)
	}
	return nil
}
