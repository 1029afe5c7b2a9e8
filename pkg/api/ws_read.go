package api

import (
	"errors"
	"fmt"
	"net"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/pkg/wire"
	"github.com/fasthttp/websocket"
)

// readLoop reads client frames until the read fails: the peer left or
// answered our close, the idle timeout passed (4002), or the close
// handshake's deadline ran out. Once the session is closing (a protocol
// violation, abuse, push's verdict, shutdown) frames are read and dropped,
// so a client in the middle of a large write still gets to read our close
// frame. Any frame, ping or pong restarts the idle timer.
func (s *session) readLoop() {
	s.readFailed(s.readFrames())
}

// readFrames reads the socket (ws_read_socket.go) and acts on each frame
// until the read ends, and returns why.
func (s *session) readFrames() error {
	s.extendReadDeadline()
	s.frames.limit = s.g.cfg.Limits.MaxFrameBytes
	if early := s.early; early != nil {
		s.early = nil
		if err := s.readBytes(early); err != nil {
			return err
		}
	}
	if s.raw != nil {
		return s.readSocket()
	}
	return s.readConn()
}

// readBytes acts on every frame that bytes read from the socket complete.
// An error ends the read: a frame that broke the protocol (answered with
// 1002), or the client's close (answered with its code). A text message,
// nearly every frame, is handled right here: the frames between the
// goroutine's start and handle are part of every busy session's stack.
func (s *session) readBytes(p []byte) error {
	for len(p) > 0 {
		s.frames.drop = s.closed()
		n, ev, err := s.frames.parse(p)
		p = p[n:]
		switch {
		case err != nil:
			return s.protocolError(err)
		case ev == evText:
			if !s.closed() {
				s.out.waitRoom(s.readerRoom())
				s.extendReadDeadline()
				s.handle(s.frames.msg)
			}
		case ev != evNone:
			if err := s.onFrame(ev); err != nil {
				return err
			}
		}
	}
	return nil
}

// onFrame acts on what the parser completed, but for text messages.
func (s *session) onFrame(ev frameEvent) error {
	switch ev {
	case evBinary:
		if !s.closed() {
			s.violation("frames must be JSON text")
		}
	case evTooLarge:
		if !s.closed() {
			s.violation("frame over max_frame_bytes")
		}
	case evPing:
		s.extendReadDeadline()
		// A pong that cannot be written shows as the socket's next error.
		_ = s.writeControl(websocket.PongMessage, s.frames.ctrl, deadline(s.g.cfg.WriteTimeout))
	case evPong:
		s.extendReadDeadline()
	case evClose:
		code, text, err := closeOf(s.frames.ctrl)
		if err != nil {
			return s.protocolError(err)
		}
		// Echo the code, no text, as the library did; writeCloseFrame keeps
		// the writer's data frames from following it.
		_ = s.writeCloseFrame(websocket.FormatCloseMessage(code, ""), deadline(controlFrameWait))
		return &websocket.CloseError{Code: code, Text: text}
	}
	return nil
}

// protocolError answers a frame that broke the protocol with a close 1002
// giving the fault, and returns err, which ends the read.
func (s *session) protocolError(err error) error {
	msg := websocket.FormatCloseMessage(websocket.CloseProtocolError, err.Error())
	_ = s.writeCloseFrame(msg[:min(len(msg), maxControlPayload)], deadline(controlFrameWait))
	return err
}

// readerRoom is how full the outbound queue may be when the reader takes
// the next frame: the rest is room for the `accepted` of every credited send,
// which come from the commits and must never find the queue full.
func (s *session) readerRoom() int {
	return max(1, s.out.limit-s.g.cfg.Limits.Credits)
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
// the check that drops repeats for free. The paths that are not a send or
// an ack are functions of their own, so that handle's stack frame, on every
// busy session's stack, stays small.
func (s *session) handle(data []byte) {
	f, err := wire.DecodeClientFrame(data, s.g.cfg.Limits.MaxFrameBytes)
	if err != nil {
		s.onUndecodable(f.CID, err)
		return
	}
	s.g.metrics.framesIn.inc(string(f.Type))
	switch f.Type {
	case wire.FrameSend:
		s.onSend(&f)
	case wire.FrameAck:
		s.onAck(&f)
	case wire.FrameRead:
		s.onRead(&f)
	case wire.FramePing:
		s.onPing()
	case wire.FrameAuth:
		s.onAuth(&f)
	case wire.FrameEdit, wire.FrameDelete, wire.FrameReact:
		s.onEvent(&f)
	case wire.FrameTyping:
		s.onTyping(&f)
	}
}

// onUndecodable answers a frame DecodeClientFrame refused: one that is not
// JSON closes the connection, any other is rejected `invalid`.
func (s *session) onUndecodable(cid string, err error) {
	if errors.Is(err, wire.ErrProtocol) {
		s.violation("frame is not JSON")
		return
	}
	s.g.metrics.framesIn.inc("invalid")
	if s.charge(tokenUnits, cid) {
		s.reject(cid, wire.CodeInvalid, err.Error())
	}
}

func (s *session) onPing() {
	if s.charge(1, "") {
		s.send(wire.AppendPong(nil), "pong")
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
func (s *session) onAck(f *wire.ClientFrame) {
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
func (s *session) onSend(f *wire.ClientFrame) {
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
func (s *session) submit(f *wire.ClientFrame) bool {
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

func (s *session) onRead(f *wire.ClientFrame) {
	if !s.charge(tokenUnits, "") {
		return
	}
	if !s.reads.mark(f.Chat, f.Upto) {
		s.reject("", wire.CodeRateLimited, "too many chats with unsaved read state")
	}
}
