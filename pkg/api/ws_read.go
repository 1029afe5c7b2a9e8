package api

import (
	"errors"
	"fmt"
	"io"
	"net"
	"slices"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/pkg/wire"
	"github.com/fasthttp/websocket"
)

// errFrameTooLarge: a client frame over max_frame_bytes (closes with 4400).
var errFrameTooLarge = errors.New("frame over max_frame_bytes")

// maxKeptReadBuf: a read buffer grown past this by one large frame is dropped
// after it, so a connection keeps only a small buffer between frames.
const maxKeptReadBuf = 16 << 10

// readLoop reads client frames until the read fails: the peer left or
// answered our close, the idle timeout passed (4002), or the close
// handshake's deadline ran out. Once the session is closing (a protocol
// violation, abuse, push's verdict, shutdown) frames are read and dropped,
// so a client in the middle of a large write still gets to read our close
// frame. Any frame, ping or pong restarts the idle timer.
func (s *session) readLoop() {
	s.setControlHandlers()
	s.extendReadDeadline()
	var buf []byte
	readerRoom := s.readerRoom()
	for {
		s.out.waitRoom(readerRoom)
		typ, r, err := s.conn.NextReader()
		if err != nil {
			s.readFailed(err)
			return
		}
		if s.closed() {
			continue // NextReader discards the rest of this message
		}
		buf, err = readFrame(r, buf[:0], s.g.cfg.Limits.MaxFrameBytes)
		switch {
		case errors.Is(err, errFrameTooLarge):
			s.violation("frame over max_frame_bytes")
			continue
		case err != nil:
			s.readFailed(err)
			return
		case typ != websocket.TextMessage:
			s.violation("frames must be JSON text")
			continue
		}
		s.extendReadDeadline()
		s.handle(buf)
		if cap(buf) > maxKeptReadBuf {
			buf = nil
		}
	}
}

// readerRoom is how full the outbound queue may be when the reader takes
// the next frame: the rest is room for the `accepted` of every credited send,
// which come from the commits and must never find the queue full.
func (s *session) readerRoom() int {
	return max(1, s.out.limit-s.g.cfg.Limits.Credits)
}

// setControlHandlers sets what the reader does with control frames: any
// ping or pong restarts the idle timer, a ping is answered, and a client's
// close is answered through writeCloseFrame (the library's own answer
// would not keep the writer's data frames from following it).
func (s *session) setControlHandlers() {
	s.conn.SetPongHandler(func(string) error { s.extendReadDeadline(); return nil })
	s.conn.SetPingHandler(func(data string) error {
		s.extendReadDeadline()
		err := s.writeControl(websocket.PongMessage, []byte(data), deadline(s.g.cfg.WriteTimeout))
		var ne net.Error
		if err == nil || errors.Is(err, websocket.ErrCloseSent) || errors.As(err, &ne) {
			return nil
		}
		return err
	})
	s.conn.SetCloseHandler(func(code int, _ string) error {
		// As the library's default: echo the code, no text.
		_ = s.writeCloseFrame(websocket.FormatCloseMessage(code, ""), deadline(controlFrameWait))
		return nil
	})
}

// readFrame reads one message into buf, never more than limit+1 bytes: memory
// stays bounded whatever length the frame header claims, and the caller can
// close with the contract's 4400 (the library's own limit would send 1009).
func readFrame(r io.Reader, buf []byte, limit int) ([]byte, error) {
	for {
		if len(buf) > limit {
			return buf, errFrameTooLarge
		}
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, min(max(cap(buf), 512), limit+1-len(buf)))
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if errors.Is(err, io.EOF) {
			if len(buf) > limit {
				return buf, errFrameTooLarge
			}
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}

// readFailed ends the session after a read error: a timeout is the idle
// reaper (4002) unless a close was already under way; anything else means
// the peer closed or vanished.
func (s *session) readFailed(err error) {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		s.closeWith(wire.CloseIdle, "idle")
		return
	}
	s.closeWith(closeNone, "")
}

func (s *session) violation(reason string) {
	s.g.metrics.framesIn.inc("protocol")
	s.closeWith(wire.CloseProtocol, reason)
}

// handle acts on one client frame. Every frame is charged to the
// connection's budget (ws_limits.go); typing is charged in onTyping, after
// the check that drops repeats for free.
func (s *session) handle(data []byte) {
	f, err := wire.DecodeClientFrame(data, s.g.cfg.Limits.MaxFrameBytes)
	switch {
	case errors.Is(err, wire.ErrProtocol):
		s.violation("frame is not JSON")
		return
	case err != nil:
		s.g.metrics.framesIn.inc("invalid")
		if s.charge(tokenUnits, f.CID) {
			s.reject(f.CID, wire.CodeInvalid, err.Error())
		}
		return
	}
	s.g.metrics.framesIn.inc(string(f.Type))
	switch f.Type {
	case wire.FrameSend:
		s.onSend(f)
	case wire.FrameAck:
		s.onAck(f)
	case wire.FrameRead:
		s.onRead(f)
	case wire.FramePing:
		if s.charge(1, "") {
			s.send(wire.AppendPong(nil), "pong")
		}
	case wire.FrameAuth:
		if s.charge(tokenUnits, "") {
			s.onAuth(f)
		}
	case wire.FrameEdit, wire.FrameDelete, wire.FrameReact:
		s.onEvent(f)
	case wire.FrameTyping:
		s.onTyping(f)
	}
}

// reject answers a frame `rejected`. Every rejection but overloaded and
// unavailable (the server's state, not the client's doing) counts toward
// the abuse rule.
// Safe from any goroutine.
func (s *session) reject(cid string, code wire.Code, msg string) {
	s.g.metrics.rejects.WithLabelValues(string(code)).Inc()
	s.send(wire.AppendRejected(nil, cid, code, msg), "rejected")
	if code != wire.CodeOverloaded && code != wire.CodeUnavailable {
		s.refused()
	}
}

// refused records a refused frame and closes with 4008 once the client
// keeps going regardless (see abuseStreak).
func (s *session) refused() {
	if s.abuse.refused(s.g.cfg.Now()) {
		s.closeWith(wire.CloseRate, "rate or credit violation: too many refused frames in a row")
	}
}

// charge takes units from the connection's budget for a frame that gets an
// answer. Over the budget the frame is answered `rejected rate_limited`
// and must be dropped.
func (s *session) charge(units int, cid string) bool {
	if s.limits.allow(s.g.cfg.Now(), units) {
		return true
	}
	s.reject(cid, wire.CodeRateLimited, "over rate_per_s/rate_burst")
	return false
}

// admit applies the connection's budget and send credits to a frame that
// stores an event (send, edit, delete, react). On false the frame was
// answered `rejected rate_limited` (or the connection closed, 4008) and must
// be dropped; on true the caller holds one credit, which onResult returns.
func (s *session) admit(cid string) bool {
	if !s.charge(tokenUnits, cid) {
		return false
	}
	if !s.limits.takeCredit() {
		s.reject(cid, wire.CodeRateLimited, "over credits: too many sends await accepted")
		return false
	}
	return true
}

// onAck hands an ack's ids to push. One frame carries at most
// wire.MaxAckIDs: push applies them under the lock every delivery takes.
func (s *session) onAck(f wire.ClientFrame) {
	if !s.charge(ackCost(len(f.IDs)), "") {
		return
	}
	if len(f.IDs) > wire.MaxAckIDs {
		s.reject("", wire.CodeTooLarge, fmt.Sprintf("ack: %d ids, at most %d per frame; nothing was acked", len(f.IDs), wire.MaxAckIDs))
		return
	}
	s.g.cfg.Delivery.Ack(s, f.IDs)
}

// onSend checks the connection's limits, then submits to ingest, which
// checks the body; the answer comes back through onResult after commit (G1).
func (s *session) onSend(f wire.ClientFrame) {
	if !s.admit(f.CID) {
		return
	}
	if s.submit(f) {
		s.typing.sent(f.Chat)
	}
}

// submit hands the request of a send, edit, delete or react frame to
// ingest, for which the caller holds a credit. Ingest checks it (the one
// check of every path, WebSocket and REST); a refusal is answered
// `rejected` and returns the credit. It reports whether ingest took it.
func (s *session) submit(f wire.ClientFrame) bool {
	cid := f.CID
	err := s.g.cfg.Ingest.Submit(f.SendRequest(s.id.User, s.id.Device), func(r chatd.SendResult) { s.onResult(cid, r) })
	if err != nil {
		s.limits.returnCredit()
		s.reject(cid, rejectCode(err), clientMessage(err))
		return false
	}
	return true
}

// onResult runs on an ingest commit worker: it must not block, and only
// queues the answer.
func (s *session) onResult(cid string, r chatd.SendResult) {
	s.limits.returnCredit()
	if r.Err != nil {
		s.reject(cid, rejectCode(r.Err), clientMessage(r.Err))
		return
	}
	s.abuse.carriedOut()
	s.send(wire.AppendAccepted(nil, &r.Message), "accepted")
}

// clientMessage is the error text a client sees: the domain message for its
// own mistakes, only the code for server-side failures (those go to logs).
func clientMessage(err error) string {
	code, status := errorCode(err)
	if status >= 500 {
		return string(code)
	}
	return err.Error()
}

func (s *session) onRead(f wire.ClientFrame) {
	if !s.charge(tokenUnits, "") {
		return
	}
	if !s.reads.mark(f.Chat, f.Upto) {
		s.reject("", wire.CodeRateLimited, "too many chats with unsaved read state")
	}
}
