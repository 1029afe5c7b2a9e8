package api

import (
	"encoding/binary"
	"time"

	"github.com/fasthttp/websocket"
)

// Data frames are framed here and written to the socket by the session's
// writer itself, every frame its writer found queued in one write: under
// load a writer often wakes to more than one queued frame, and on a VM each
// write system call costs more than framing the bytes
// (docs/benchmarks-log.md, "One socket write per
// writer wake, and where PostgreSQL's time goes (2026-12-01/02)"). The
// library's WriteMessage writes one frame per call and has no way to hold a
// write back. The library still writes the control frames (ping, pong,
// close), under the session's socketMu like every data write, so none goes
// out inside a frame begun inline (ws_write_inline.go). A close frame goes
// out through writeCloseFrame, after which no data frame does. The one
// write that bypasses socketMu is the library's own close after a client's
// framing error (its handleProtocolError): it may land inside a frame begun
// inline, on a stream that client broke already, and if that client's socket
// buffer is full, an inline write attempted meanwhile waits for the
// descriptor's write lock for at most the library's one-second write wait.

// coalesceLimit is where a writer stops adding frames to one write: a burst
// to a slow reader goes out in pieces of about this size, and no buffer this
// large is kept after it (see putWriteBuffer).
const coalesceLimit = 32 << 10

// appendTextFrame appends payload as one unfragmented, unmasked text frame
// (RFC 6455 section 5.2: a server never masks).
func appendTextFrame(dst, payload []byte) []byte {
	const finText = 0x81 // FIN bit, opcode 1 (text)
	n := len(payload)
	switch {
	case n <= 125:
		dst = append(dst, finText, byte(n))
	case n <= 0xffff:
		dst = append(dst, finText, 126)
		dst = binary.BigEndian.AppendUint16(dst, uint16(n))
	default:
		dst = append(dst, finText, 127)
		dst = binary.BigEndian.AppendUint64(dst, uint64(n))
	}
	return append(dst, payload...)
}

// writeFrames writes frames to the socket, after the rest of a frame begun
// inline, as few writes as coalesceLimit allows, all before deadline. Only
// the writer role may call it (see outQueue); a frame counts as out once the
// write carrying it returned.
func (s *session) writeFrames(frames []outFrame, deadline time.Time) error {
	// Only the role's holder begins a frame inline, so no new tail can
	// appear between this flush and the writes below.
	if err := s.flushTail(deadline); err != nil || len(frames) == 0 {
		return err
	}
	// On the socket itself: the library's SetWriteDeadline only stores a
	// deadline for its own writes.
	if err := s.conn.NetConn().SetWriteDeadline(deadline); err != nil {
		return err
	}
	buf := s.g.getWriteBuffer()
	defer func() { s.g.putWriteBuffer(buf) }()
	for len(frames) > 0 {
		var n int
		*buf, n = appendFrames((*buf)[:0], frames)
		if err := s.writeSocket(*buf, frames[:n]); err != nil {
			return err
		}
		frames = frames[n:]
	}
	return nil
}

// appendFrames frames the leading frames that fit in coalesceLimit (at least
// one) into dst and says how many it framed. A message's frame is encoded
// once, for all its recipients, by the first writer that needs it.
func appendFrames(dst []byte, frames []outFrame) (_ []byte, n int) {
	for ; n < len(frames); n++ {
		f := frames[n]
		data := f.data
		if f.msg != nil {
			data = f.msg.Frame(encodeMsg)
		}
		if len(dst) > 0 && len(dst)+len(data) > coalesceLimit {
			break
		}
		dst = appendTextFrame(dst, data)
	}
	return dst, n
}

// countOut counts frames as out: the write carrying them returned.
func (s *session) countOut(frames []outFrame) {
	for _, f := range frames {
		s.g.metrics.framesOut.inc(f.kind)
	}
}

// writeSocket writes b, the framed frames, in one write and counts them,
// unless a close frame went out before: RFC 6455 allows no data frame after
// it. (The library knew that for its own writes; these bypass it.)
func (s *session) writeSocket(b []byte, frames []outFrame) error {
	s.socketMu.Lock()
	defer s.socketMu.Unlock()
	if s.closeFrameSent {
		return websocket.ErrCloseSent
	}
	if _, err := s.conn.NetConn().Write(b); err != nil {
		return err
	}
	s.g.metrics.wsWrites.Inc()
	s.countOut(frames)
	return nil
}

// writeCloseFrame sends a close frame (msg from FormatCloseMessage) after
// any data write in progress, and keeps every data frame off the socket from
// then on. Every close frame the server sends goes through it: its own
// choice (writeClose), a refusal, and the reply to a client's close.
func (s *session) writeCloseFrame(msg []byte, deadline time.Time) error {
	s.socketMu.Lock()
	defer s.socketMu.Unlock()
	s.closeFrameSent = true
	return s.writeControlLocked(websocket.CloseMessage, msg, deadline)
}

// writeControl sends a ping or a pong between data writes.
func (s *session) writeControl(messageType int, data []byte, deadline time.Time) error {
	s.socketMu.Lock()
	defer s.socketMu.Unlock()
	return s.writeControlLocked(messageType, data, deadline)
}

// writeControlLocked writes a control frame through the library once the
// rest of a frame begun inline is out. The caller holds socketMu.
func (s *session) writeControlLocked(messageType int, data []byte, deadline time.Time) error {
	if err := s.flushTailLocked(deadline); err != nil {
		return err
	}
	return s.conn.WriteControl(messageType, data, deadline)
}

// getWriteBuffer lends a buffer for one writeFrames; idle connections hold
// none.
func (g *gateway) getWriteBuffer() *[]byte {
	if b, ok := g.frameBuffers.Get().(*[]byte); ok {
		return b
	}
	b := make([]byte, 0, 4<<10)
	return &b
}

// putWriteBuffer takes a buffer back, unless a big frame grew it past
// coalesceLimit: the pool would keep that memory for frames that rarely come.
func (g *gateway) putWriteBuffer(b *[]byte) {
	if cap(*b) > coalesceLimit {
		return
	}
	*b = (*b)[:0]
	g.frameBuffers.Put(b)
}
