package api

import (
	"errors"
	"net"
	"os"
	"syscall"
	"time"
)

// A frame queued for a connection with no writer running is written by the
// goroutine that queued it (a commit's worker, the push relay, the session's
// reader) in one write that never waits: starting and scheduling a writer
// goroutine for every frame cost one node 4-7% of its CPU
// (docs/benchmarks-log.md, "Frames written by the goroutine that queued them
// (2026-12-06, 00:15–00:56 UTC)"). Whatever that attempt cannot finish, a
// writer goroutine takes over: a socket buffer that is full, a deadline that
// passed, a write lock held by a control frame, a burst past coalesceLimit,
// the close. So a client that stops reading never holds up the goroutine
// that queued its frame (the one bounded exception is in ws_write.go: the
// library's own close after a framing error).
//
// A write that never waits can end in the middle of a frame. The rest
// (session.tail) goes out before any other byte on the socket: every write
// takes socketMu and flushes the tail first (flushTailLocked), data, pings,
// pongs and close frames alike.

// rawConnOf is the socket under a hijacked WebSocket connection, to write
// without waiting; nil when there is none (TLS, a pipe in tests), and then
// every write goes through a writer goroutine.
func rawConnOf(c net.Conn) syscall.RawConn {
	if u, ok := c.(interface{ UnsafeConn() net.Conn }); ok { // fasthttp's hijacked conn
		c = u.UnsafeConn()
	}
	if lc, ok := c.(*limitedConn); ok {
		c = lc.Conn
	}
	sc, ok := c.(syscall.Conn)
	if !ok {
		return nil
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	return raw
}

// writeNow writes what is queued from the caller's goroutine, which holds
// the writer role (counted in out.writers), and gives the role up; or hands
// it, with what is left to write, to a writer goroutine.
func (s *session) writeNow() {
	if s.raw == nil || s.closed() {
		go s.writeRun(nil)
		return
	}
	batch, more := s.out.next(nil)
	if !more { // nothing queued after all: next gave the role up
		s.out.writers.Done()
		return
	}
	rest, whole, err := s.writeInline(batch)
	if err != nil {
		s.writeFailed(err)
		s.out.writers.Done()
		return
	}
	if whole && s.out.finish() {
		s.out.writers.Done()
		return
	}
	go s.writeRun(rest)
}

// writeInline frames the frames of batch that fit in coalesceLimit and
// writes them without waiting; whole reports that all of batch is on the
// socket. Otherwise a writer goroutine must write the rest of a frame the
// socket took in part (s.tail) and then rest: the frames not framed, or all
// of batch when nothing could be written.
func (s *session) writeInline(batch []outFrame) (rest []outFrame, whole bool, err error) {
	if len(batch) == 0 || !s.socketMu.TryLock() {
		return batch, false, nil
	}
	defer s.socketMu.Unlock()
	if s.closeFrameSent || s.tail != nil {
		return batch, false, nil // the writer goroutine finds out what to do
	}
	buf := s.g.getWriteBuffer()
	var framed int
	*buf, framed = appendFrames(*buf, batch)
	n, err := s.writeOnce(*buf)
	if err != nil || n == 0 {
		s.g.putWriteBuffer(buf)
		if err != nil && !errors.Is(err, errWriteLater) {
			return nil, false, err
		}
		return batch, false, nil
	}
	s.g.metrics.wsWrites.Inc()
	if n < len(*buf) {
		s.tail, s.tailFrom = buf, n
		s.tailKinds = s.tailKinds[:0]
		for _, f := range batch[:framed] {
			s.tailKinds = append(s.tailKinds, f.kind)
		}
		clear(batch[:framed]) // the writer goroutine reuses batch's array
		return batch[framed:], false, nil
	}
	s.g.putWriteBuffer(buf)
	s.countOut(batch[:framed])
	clear(batch[:framed])
	return batch[framed:], framed == len(batch), nil
}

// flushTail writes the rest of a frame writeInline began, if any, before
// deadline.
func (s *session) flushTail(deadline time.Time) error {
	s.socketMu.Lock()
	defer s.socketMu.Unlock()
	return s.flushTailLocked(deadline)
}

// errWriteLater: the socket cannot take bytes now, or its write deadline
// passed; a writer goroutine writes them, waiting, with a deadline of its own.
var errWriteLater = errors.New("write later")

// writeOnce makes one write(2) of b on the socket and returns how much of
// b it took. It never waits: a full socket buffer is errWriteLater.
func (s *session) writeOnce(b []byte) (int, error) {
	var n int
	var werr error
	err := s.raw.Write(func(fd uintptr) bool {
		n, werr = syscall.Write(int(fd), b)
		return true // one attempt: never wait for the socket
	})
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		return 0, errWriteLater
	case err != nil:
		return 0, err
	case errors.Is(werr, syscall.EAGAIN) || errors.Is(werr, syscall.EINTR):
		return 0, errWriteLater
	case werr != nil:
		return 0, werr
	}
	return n, nil
}

// flushTailLocked writes the rest of a frame writeInline began, if any,
// before deadline, so the next bytes on the socket start a frame. The caller
// holds socketMu.
func (s *session) flushTailLocked(deadline time.Time) error {
	if s.tail == nil {
		return nil
	}
	if err := s.conn.NetConn().SetWriteDeadline(deadline); err != nil {
		return err
	}
	buf := s.tail
	_, err := s.conn.NetConn().Write((*buf)[s.tailFrom:])
	s.tail = nil
	s.g.putWriteBuffer(buf)
	if err != nil {
		return err
	}
	s.g.metrics.wsWrites.Inc()
	for _, k := range s.tailKinds {
		s.g.metrics.framesOut.inc(k)
	}
	return nil
}
