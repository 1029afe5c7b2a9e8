package client

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/pkg/wire"
	"github.com/fasthttp/websocket"
)

// closeWait bounds how long a clean shutdown waits for the server to answer
// our close frame before dropping the connection.
const closeWait = time.Second

// maxKeptWriteBuf: a session keeps its frame buffer between writes up to
// this size (any send of a default-sized body fits), so writing allocates
// nothing in the steady state, yet a fleet of idle sessions holds little.
const maxKeptWriteBuf = 4 << 10

// maxKeptReadBuf is the same bound for the buffer frames are read into.
const maxKeptReadBuf = 4 << 10

// session is one WebSocket connection from hello to close. Its goroutines
// (acker, pinger, syncer, refresher, closer) are started and waited for by runSession.
type session struct {
	c      *Client
	conn   *websocket.Conn
	user   string
	device string
	ping   time.Duration
	idle   time.Duration
	acker  *acker
	syncer *syncer
	done   chan struct{} // closed when the session has ended

	refresh *refresher

	// credits holds one token per send awaiting its answer on this
	// connection; nil when hello set no limit.
	credits chan struct{}

	wmu  sync.Mutex // one frame writer at a time (the library allows one)
	wbuf []byte     // guarded by wmu; reused, frames are encoded into it

	mu       sync.Mutex
	inflight map[string]int // cid → sends on this connection holding a credit
}

func newSession(c *Client, conn *websocket.Conn, hello *wire.ServerFrame, token string) *session {
	s := &session{
		c:        c,
		conn:     conn,
		user:     hello.User,
		device:   hello.Device,
		ping:     time.Duration(hello.Limits.PingIntervalMS) * time.Millisecond,
		idle:     time.Duration(hello.Limits.IdleTimeoutMS) * time.Millisecond,
		done:     make(chan struct{}),
		inflight: make(map[string]int),
	}
	if s.ping <= 0 {
		s.ping = 10 * time.Second
	}
	if n := hello.Limits.Credits; n > 0 {
		s.credits = make(chan struct{}, n)
	}
	// An id and its quotes and comma take under 32 bytes; leave room for
	// the frame's envelope.
	maxIDs := 1000
	if fb := hello.Limits.MaxFrameBytes; fb > 0 {
		maxIDs = int(max(1, min(int64(maxIDs), (fb-64)/32)))
	}
	s.acker = newAcker(max(c.cfg.AckDelay, 0), maxIDs, s.writeAck)
	s.syncer = newSyncer(s)
	s.refresh = newRefresher(s, token)
	return s
}

// runSession runs one connected session until the connection ends; it
// returns the *CloseError that ended it after every session goroutine has
// stopped and the connection is closed.
func (c *Client) runSession(ctx context.Context, conn *websocket.Conn, hello *wire.ServerFrame, token string) error {
	s := newSession(c, conn, hello, token)
	sctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for _, fn := range []func(context.Context) error{s.acker.run, s.pinger, s.syncer.run, s.refresh.run} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := fn(sctx); err != nil {
				c.log.Debug("session worker stopped", "err", err)
				conn.Close() // ends the read loop, and so the session
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		<-sctx.Done()
		s.shutdown(ctx.Err() != nil)
	}()

	c.publish(s)
	c.stats.connects.Add(1)
	c.log.Debug("connected", "user", s.user, "device", s.device)
	c.emit(sctx, Event{Kind: EventState, State: State{Connected: true, User: s.user, Device: s.device}})
	s.syncer.resyncAll()

	err := s.readLoop(sctx)
	c.unpublish(s)
	cancel()
	wg.Wait()
	conn.Close()
	return err
}

// shutdown ends the connection. A clean one (Run is stopping) flushes the
// acks, sends a normal close frame and gives the server closeWait to answer,
// so the read loop ends on the close handshake; otherwise the connection is
// simply dropped.
func (s *session) shutdown(clean bool) {
	if !clean {
		s.conn.Close()
		return
	}
	if err := s.acker.drain(); err != nil {
		s.conn.Close()
		return
	}
	deadline := time.Now().Add(closeWait)
	msg := websocket.FormatCloseMessage(websocket.CloseNormalClosure, "client closing")
	if err := s.conn.WriteControl(websocket.CloseMessage, msg, deadline); err != nil {
		s.conn.Close()
		return
	}
	s.conn.SetReadDeadline(deadline)
}

// publish makes s the session that sends and Track use, and wakes the
// sends waiting for one.
func (c *Client) publish(s *session) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sess = s
	close(c.sessUp)
}

// unpublish withdraws s; sends waiting on it see s.done and resend on the
// next session.
func (c *Client) unpublish(s *session) {
	c.mu.Lock()
	c.sess = nil
	c.sessUp = make(chan struct{})
	c.mu.Unlock()
	close(s.done)
}

// readTimeout is how long the connection may stay silent before it is
// considered dead: our pings are answered with pongs, so silence for several
// ping intervals means the path is gone.
func (s *session) readTimeout() time.Duration {
	return max(3*s.ping, s.idle)
}

// pinger sends the app-level ping every ping interval from hello.
func (s *session) pinger(ctx context.Context) error {
	t := time.NewTicker(s.ping)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			if err := s.write(&wire.ClientFrame{Type: wire.FramePing}); err != nil {
				return err
			}
		}
	}
}

// write sends one frame. A failed write closes the connection: the stream
// is broken and the read loop must end the session.
func (s *session) write(f *wire.ClientFrame) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if err := s.conn.SetWriteDeadline(time.Now().Add(s.c.cfg.WriteTimeout)); err != nil {
		return fmt.Errorf("write frame: %w", err)
	}
	s.wbuf = wire.AppendClientFrame(s.wbuf[:0], f)
	err := s.conn.WriteMessage(websocket.TextMessage, s.wbuf)
	if cap(s.wbuf) > maxKeptWriteBuf {
		s.wbuf = nil // one large send does not pin its buffer for good
	}
	if err != nil {
		s.conn.Close()
		return fmt.Errorf("write frame: %w", err)
	}
	return nil
}

func (s *session) writeAck(ids []string) error {
	if err := s.write(&wire.ClientFrame{Type: wire.FrameAck, IDs: ids}); err != nil {
		return err
	}
	s.c.stats.ackFrames.Add(1)
	s.c.stats.ackedIDs.Add(int64(len(ids)))
	return nil
}

// acquire takes a send credit for cid on this connection, blocking until one
// is free (the server rejects a send beyond its credits).
func (s *session) acquire(ctx context.Context, cid string) error {
	if s.credits != nil {
		select {
		case s.credits <- struct{}{}:
		case <-s.done:
			return errSessionDone
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	s.mu.Lock()
	s.inflight[cid]++
	s.mu.Unlock()
	return nil
}

// release returns the credit a send of cid held, when the server answers it.
func (s *session) release(cid string) {
	s.mu.Lock()
	n, ok := s.inflight[cid]
	if ok {
		if n <= 1 {
			delete(s.inflight, cid)
		} else {
			s.inflight[cid] = n - 1
		}
	}
	s.mu.Unlock()
	if ok && s.credits != nil {
		<-s.credits
	}
}

var errSessionDone = errors.New("session ended")

// ownMessage is the message this client sent, as the accepted frame and the
// pending send describe it.
func (s *session) ownMessage(f *wire.ServerFrame, p *pending) chatd.Message {
	m := chatd.Message{ID: f.ID, CID: f.CID, Chat: p.chat, From: s.user, Body: p.body, Seq: f.Seq, TS: f.TS}
	p.setEventFields(&m)
	return m
}
