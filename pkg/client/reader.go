package client

import (
	"bytes"
	"context"
	"time"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/internal/idle"
	"github.com/chatd/chatd/pkg/wire"
)

// readLoop reads frames until the connection ends and returns why, as a
// *CloseError. Every frame, pongs included, extends the read deadline
// (lazily, as the server does: internal/idle). One
// frame value is decoded into again and again, and one buffer read into:
// the decoder copies every string and the handlers copy what they keep, so
// a delivery allocates no frame-sized slice (ReadMessage's io.ReadAll grew a
// new one per frame, and with 10,000 sessions that garbage was most of a
// load generator's GC).
func (s *session) readLoop(ctx context.Context) error {
	var f wire.ServerFrame
	var buf bytes.Buffer
	timeout := s.readTimeout()
	var deadline idle.Deadline
	for {
		// After a clean shutdown began, the deadline set there stands.
		if ctx.Err() == nil {
			if at, move := deadline.Next(time.Now(), timeout); move {
				if err := s.conn.SetReadDeadline(at); err != nil {
					return closeError(err)
				}
			}
		}
		data, err := s.readFrame(&buf)
		if err != nil {
			return closeError(err)
		}
		if err := wire.DecodeServerFrame(data, &f); err != nil {
			s.c.log.Warn("ignoring undecodable frame", "err", err)
			continue
		}
		s.handle(ctx, &f)
	}
}

// readFrame reads the next message into buf and returns its bytes, valid
// until the next call. A buffer grown past maxKeptReadBuf by one large frame
// is dropped afterwards, so an idle session does not keep it.
func (s *session) readFrame(buf *bytes.Buffer) ([]byte, error) {
	if buf.Cap() > maxKeptReadBuf {
		*buf = bytes.Buffer{}
	}
	buf.Reset()
	_, r, err := s.conn.NextReader()
	if err != nil {
		return nil, err
	}
	if _, err := buf.ReadFrom(r); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func (s *session) handle(ctx context.Context, f *wire.ServerFrame) {
	switch f.Type {
	case wire.FrameMsg:
		s.onMsg(ctx, f)
	case wire.FrameAccepted:
		s.onAccepted(ctx, f)
	case wire.FrameRejected:
		s.onRejected(f)
	case wire.FrameReceipt:
		s.c.emit(ctx, Event{Kind: EventReceipt, Receipt: Receipt{Chat: f.Chat, User: f.User, Upto: f.Upto, Seq: f.Seq}})
	case wire.FrameAuthed:
		s.refresh.onAuthed(f.Exp)
	case wire.FrameTyping, wire.FramePresence:
		s.onSignal(ctx, f)
	case wire.FramePong, wire.FrameHello:
	default:
		// Newer servers may add frames; ignoring them keeps old clients working.
		s.c.log.Debug("ignoring unknown frame", "type", f.Type)
	}
}

// onMsg acks the frame (duplicates too: the server counts the ack, not the
// message) and merges it by seq. A frame held behind a gap schedules a
// history fetch of the gap unless it is filled live within GapWait.
func (s *session) onMsg(ctx context.Context, f *wire.ServerFrame) {
	c := s.c
	c.stats.msgFrames.Add(1)
	if f.ID != "" {
		s.acker.add(f.ID)
	}
	if c.deliver([]chatd.Message{f.Message}, ViaLive) > 0 {
		c.stats.dupFrames.Add(1)
	}
	if c.tracker.hasGap(f.Chat) {
		s.syncer.request(f.Chat, c.cfg.GapWait)
	}
}

// onAccepted answers the waiting send and, since the server does not deliver
// a message to the device that sent it, merges the message itself so the
// chat's seq stays contiguous.
func (s *session) onAccepted(ctx context.Context, f *wire.ServerFrame) {
	c := s.c
	c.stats.accepted.Add(1)
	s.release(f.CID)
	p := c.take(f.CID)
	if p == nil {
		return // its Send gave up; a gap fetch will bring the message back
	}
	// p is reused once answered: read what the own copy needs first.
	own := s.ownMessage(f, p)
	p.result <- sendResult{acc: Accepted{CID: f.CID, ID: f.ID, Seq: f.Seq, TS: f.TS}}
	c.deliver([]chatd.Message{own}, ViaSelf)
	if c.tracker.hasGap(own.Chat) {
		s.syncer.request(own.Chat, c.cfg.GapWait)
	}
}

func (s *session) onRejected(f *wire.ServerFrame) {
	c := s.c
	c.stats.reject(string(f.Code))
	if f.CID == "" {
		c.log.Warn("send rejected without cid", "code", f.Code, "error", f.Error)
		return
	}
	s.release(f.CID)
	c.answer(f.CID, sendResult{err: &RejectedError{CID: f.CID, Code: f.Code, Message: f.Error}})
}
