package api

import (
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/internal/idle"
	"github.com/chatd/chatd/pkg/push"
	"github.com/chatd/chatd/pkg/wire"
	"github.com/fasthttp/websocket"
)

const (
	// closeNone: the peer closed or vanished, so there is no close frame
	// to send. Not a wire code: it never leaves the process.
	closeNone        wire.CloseCode = 0
	closeHandshake                  = time.Second // how long a closing session waits for the peer's close
	controlFrameWait                = time.Second // write deadline of close frames
)

// deadline is a socket deadline d from now. The runtime's network poller
// compares deadlines with the wall clock, so they never come from
// Config.Now, which decides the timing logic (limits, tokens, penalties).
func deadline(d time.Duration) time.Time { return time.Now().Add(d) }

// closeCode maps push's withdrawal reasons to close codes.
func closeCode(r push.Reason) wire.CloseCode {
	switch r {
	case push.ReasonAbandoned:
		return wire.CloseAbandoned
	case push.ReasonOverloaded:
		return wire.CloseOverloaded
	case push.ReasonIdle:
		return wire.CloseIdle
	case push.ReasonSuperseded:
		return wire.CloseSuperseded
	case push.ReasonResync:
		// The node's consumer was recreated: like an abandon, the client
		// reconnects and resyncs from history.
		return wire.CloseAbandoned
	}
	// ReasonShutdown, ReasonUnavailable: reconnect, to another node if
	// this one is going or cannot reach NATS.
	return wire.CloseGoingAway
}

// outFrame is one queued server frame: a message to encode on the writer
// (msg != nil) or an already encoded frame.
type outFrame struct {
	msg  *push.Outgoing // shared with the message's other recipients: encoded once
	data []byte
	kind string // metrics label
	// answer marks a frame that must not be lost (accepted, rejected,
	// pong, authed): it may use the queue's reserved room.
	answer bool
}

// session is one WebSocket connection; it implements push.Conn. Its handler
// goroutine reads; everyone else hands frames to the bounded out queue
// without blocking. Whoever queues a frame when no writer runs becomes the
// writer (at most one runs, see outQueue, so frames keep their order): it
// writes what the socket takes at once (ws_write_inline.go), and a writer
// goroutine, gone when the queue is empty, writes the rest. Pings go out
// from a timer, between data writes (see ws_write.go).
type session struct {
	g    *gateway
	conn *websocket.Conn
	raw  syscall.RawConn // conn's socket, for writes that never wait; nil: none
	id   Identity

	out *outQueue
	// owed is set when Deliver took the writer role for push, whose Flush
	// then writes (push writes only after releasing its lock).
	owed atomic.Bool
	// stopped is set once the close code is chosen: a flag, since nothing
	// waits for it and every delivery and frame asks.
	stopped atomic.Bool

	pingMu    sync.Mutex
	pinger    *time.Timer // guarded by pingMu
	pingEnded bool        // guarded by pingMu

	closeOnce sync.Once
	code      wire.CloseCode // set once, before stop is closed
	reason    string         // close frame text

	// socketMu orders the writes on the socket: a control frame goes out
	// between data writes, after the rest of a frame begun inline, and no
	// data frame follows the close frame (ws_write.go).
	socketMu       sync.Mutex
	closeFrameSent bool // guarded by socketMu
	// tail is the buffer of a write the socket took only in part, from
	// tailFrom on; tailKinds are its frames' kinds, counted once it is out.
	tail      *[]byte  // guarded by socketMu
	tailFrom  int      // guarded by socketMu
	tailKinds []string // guarded by socketMu

	// deadlineMu orders read-deadline changes: once closing, the reader must
	// not push the deadline back out past the close handshake's.
	deadlineMu sync.Mutex
	// idleDeadline decides when extendReadDeadline moves the deadline.
	idleDeadline idle.Deadline // guarded by deadlineMu

	limits connLimits
	abuse  abuseStreak
	reads  readMarker

	auth   tokenLife
	typing typingLimiter // read loop only

	// frames parses what the reader reads; early holds what the client sent
	// behind its upgrade request, read first (ws_read_socket.go). Read loop
	// only.
	frames frameParser
	early  []byte
}

func newSession(g *gateway, conn *websocket.Conn, id Identity) *session {
	s := &session{
		g:      g,
		conn:   conn,
		raw:    rawConnOf(conn.NetConn()),
		id:     id,
		out:    newOutQueue(g.cfg.OutboundQueue, g.cfg.answerRoom()),
		limits: newConnLimits(g.cfg.limitsFor(id)),
		abuse:  newAbuseStreak(g.cfg),
	}
	s.reads.s = s
	return s
}

// logger tags the server's logger with the session's identity. It is built
// when a (rare) session log line is written rather than kept per session:
// a tagged logger holds a few hundred bytes, for each of thousands of idle
// sessions.
func (s *session) logger() *slog.Logger {
	return s.g.srv.log.With("user", s.id.User, "device", s.id.Device)
}

// User is the session's user (push.Conn).
func (s *session) User() string { return s.id.User }

// Device is the session's device (push.Conn).
func (s *session) Device() string { return s.id.Device }

// UserPresent tells presence that this session is its user's first on this
// node, or was the last (push.Conn). Under the registry's lock, so one
// user's connects and disconnects reach presence in order.
func (s *session) UserPresent(present bool) {
	p := s.g.cfg.Presence
	switch {
	case p == nil:
	case present:
		p.Connected(s.id.User)
	default:
		p.Disconnected(s.id.User)
	}
}

// Deliver queues a `msg` frame without blocking (push.Conn); false when the
// queue is full or the session is closing. It queues m itself, which push
// never changes once handed out; the writer encodes it later, through m's
// frame shared with the message's other recipients.
func (s *session) Deliver(m *push.Outgoing) bool {
	if s.closed() {
		return false
	}
	ok, start := s.out.push(outFrame{msg: m, kind: "msg"})
	if start {
		s.owed.Store(true)
	}
	if !ok {
		s.g.metrics.queueFull.WithLabelValues("msg").Inc()
	}
	return ok
}

// Flush writes what Deliver queued when Deliver took the writer role for it
// (push.Conn); a writer already at work writes it otherwise.
func (s *session) Flush() {
	if s.owed.Swap(false) {
		s.writeNow()
	}
}

// Close ends the session with the close code of reason (push.Conn). It does
// not block; later calls change nothing.
func (s *session) Close(reason push.Reason) {
	s.closeWith(closeCode(reason), reason.String())
}

// closeWith chooses the session's close code (the first caller wins) and
// wakes the writer, which sends the close frame. It reports whether this
// call chose.
func (s *session) closeWith(code wire.CloseCode, reason string) bool {
	chose := false
	s.closeOnce.Do(func() {
		s.code, s.reason, chose = code, reason, true
		label := "peer"
		if code != closeNone {
			label = strconv.Itoa(int(code))
		}
		s.g.metrics.closes.WithLabelValues(label).Inc()
		if code == wire.CloseRate || code == wire.CloseProtocol {
			s.g.penalties.punish(s.id.User, s.g.cfg.Now())
		}
		s.stopped.Store(true)
		// Inside the Once: a concurrent closeWith returns only after the
		// writer that sends the close frame is counted.
		if s.out.close() {
			s.startWriter()
		}
	})
	return chose
}

func (s *session) closed() bool { return s.stopped.Load() }

// send queues an encoded control frame (accepted, rejected, pong). These
// must not be lost silently: a client would wait forever for its answer. So
// a full queue (the client stopped reading) closes the session with 4001;
// the client reconnects and resends with the same cid.
func (s *session) send(data []byte, kind string) {
	if s.closed() {
		return
	}
	if !s.enqueue(outFrame{data: data, kind: kind, answer: true}) {
		s.g.metrics.queueFull.WithLabelValues(kind).Inc()
		s.closeWith(wire.CloseOverloaded, "outbound queue full")
	}
}

// offer queues a best-effort frame (receipt): dropped when the queue is full.
func (s *session) offer(data []byte, kind string) {
	if s.closed() {
		return
	}
	if !s.enqueue(outFrame{data: data, kind: kind}) {
		s.g.metrics.queueFull.WithLabelValues(kind).Inc()
	}
}

// refuse closes a socket that cannot get a session (the server is
// shutting down, or live delivery is not ready) with 1001 going away: the
// client reconnects, here or to another node, and resyncs from history.
func (s *session) refuse(why string) {
	_ = s.writeCloseFrame(websocket.FormatCloseMessage(int(wire.CloseGoingAway), why), deadline(controlFrameWait))
}

// run is the session's life: register for live delivery, then `hello`
// (so anything committed after hello is delivered live, and anything before
// it is in history), then read until the end. Detach and the writer's exit
// are waited for before run returns, because the conn is pooled after.
func (s *session) run() {
	if !s.open() {
		return
	}
	defer s.end()
	s.readLoop()
}

// open registers the session for live delivery, writes `hello` and starts
// the pinger and the token's expiry; false when the session ends there,
// undone. A function of its own so that its locals are not part of run's
// stack frame (see writeHello).
func (s *session) open() (ok bool) {
	s.takeEarlyBytes()
	d := s.g.cfg.Delivery
	// Refused while the node's consumer does not exist (starting, being
	// recreated) or JetStream is unreachable: a `hello` now would promise
	// live delivery of messages this node's consumer will never see.
	// preUpgrade already answered 503 in that state; this catches the race.
	// No writer can run (this goroutine holds the role), so writing the
	// close frame here is safe.
	if err := d.Attach(s); err != nil {
		s.closeWith(wire.CloseGoingAway, "live delivery not ready")
		s.logger().Info("session refused", "err", err)
		s.refuse("live delivery not ready; reconnect")
		return false
	}
	defer func() {
		if !ok {
			d.Detach(s)
		}
	}()
	if s.g.closing() {
		// Shutdown listed the registered sessions before this one was:
		// close it like them (after its hello, below).
		s.closeWith(wire.CloseGoingAway, "server shutting down")
	}
	// hello is written here while this goroutine holds the writer role
	// (outQueue starts taken), so it is the first frame even if push
	// delivered while Attach returned.
	if err := s.writeHello(); err != nil {
		s.closeWith(closeNone, "")
		return false
	}
	if s.out.release() {
		s.startWriter()
	}
	s.startPinger()
	s.startExpiry()
	return true
}

// end undoes open once the reader is done (or panicked): the writer's exit
// and the read marks' save are waited for, then the session is detached.
func (s *session) end() {
	s.closeWith(closeNone, "")
	s.stopPinger()
	s.stopExpiry()
	s.out.writers.Wait()
	s.reads.wait()
	s.g.cfg.Delivery.Detach(s)
}

// writeHello writes the `hello` frame. It is a function of its own so that
// its locals (the limits, the frame) are not part of run's stack frame,
// which stays at the bottom of every session goroutine's stack while it
// reads: a larger frame there pushes the deepest read paths past the
// goroutine's initial stack, which then doubles for every connection.
func (s *session) writeHello() error {
	limits := s.g.cfg.limitsFor(s.id)
	hello := wire.AppendHello(nil, s.id.User, s.id.Device, limits.announced())
	return s.writeFrames([]outFrame{{data: hello, kind: "hello"}}, deadline(s.g.cfg.WriteTimeout))
}

// enqueue queues f; when no writer runs, the caller becomes it (writeNow).
func (s *session) enqueue(f outFrame) bool {
	ok, start := s.out.push(f)
	if start {
		s.writeNow()
	}
	return ok
}

// startWriter runs a writer goroutine; the caller holds the writer role for
// it and outQueue has already counted it.
func (s *session) startWriter() {
	go s.writeRun(nil)
}

// writeRun is the only data writer while it runs. It writes first the rest
// of what an inline write began (the tail, then pending), then the frames
// queued at each wake in one socket write (writeFrames); it returns when the
// queue is empty, and once the session closes writes the close frame and
// starts the close handshake's deadline.
func (s *session) writeRun(pending []outFrame) {
	defer s.out.writers.Done()
	batch := pending
	for {
		if s.closed() {
			s.writeClose(batch)
			return
		}
		if err := s.writeFrames(batch, deadline(s.g.cfg.WriteTimeout)); err != nil {
			s.writeFailed(err)
			return
		}
		var more bool
		batch, more = s.out.next(batch)
		if !more {
			return
		}
	}
}

// writeFailed ends the session after a failed write: the peer is gone or
// stopped reading past the write timeout.
func (s *session) writeFailed(err error) {
	s.logger().Debug("websocket write failed", "err", err)
	s.closeWith(closeNone, "")
	s.abort()
}

// encodeMsg encodes a `msg` frame for push.Outgoing.Frame.
func encodeMsg(m *chatd.Message) []byte { return wire.AppendMsg(nil, m) }

// startPinger sends a WebSocket ping every PingInterval from a timer
// instead of a goroutine per connection.
func (s *session) startPinger() {
	s.pingMu.Lock()
	defer s.pingMu.Unlock()
	s.pinger = time.AfterFunc(s.g.cfg.Limits.PingInterval, s.ping)
}

func (s *session) ping() {
	s.pingMu.Lock()
	defer s.pingMu.Unlock()
	if s.pingEnded || s.closed() {
		return
	}
	if err := s.writeControl(websocket.PingMessage, nil, deadline(s.g.cfg.WriteTimeout)); err != nil {
		s.closeWith(closeNone, "")
		s.abort()
		return
	}
	s.pinger.Reset(s.g.cfg.Limits.PingInterval)
}

// stopPinger stops the timer and waits out a ping in progress, so nothing
// touches the connection after run returns (the library pools it).
func (s *session) stopPinger() {
	s.pingMu.Lock()
	defer s.pingMu.Unlock()
	s.pingEnded = true
	if s.pinger != nil {
		s.pinger.Stop()
	}
}

// writeClose flushes pending and what is queued (so a client learns why,
// e.g. the rejections before a 4008, and gets the accepted frames of sends
// that committed), sends the chosen close frame and gives the peer
// closeHandshake to answer before the reader's deadline ends the session.
func (s *session) writeClose(pending []outFrame) {
	if s.code == closeNone {
		s.abort()
		return
	}
	if s.code != wire.CloseOverloaded { // an overloaded client is not reading
		_ = s.writeFrames(append(pending, s.out.drain()...), deadline(controlFrameWait))
	}
	_ = s.writeCloseFrame(websocket.FormatCloseMessage(int(s.code), s.reason), deadline(controlFrameWait))
	s.deadlineMu.Lock()
	_ = s.conn.SetReadDeadline(deadline(closeHandshake))
	s.deadlineMu.Unlock()
}

// abort unblocks the reader at once.
func (s *session) abort() {
	s.deadlineMu.Lock()
	_ = s.conn.SetReadDeadline(deadline(0))
	s.deadlineMu.Unlock()
}

// extendReadDeadline restarts the idle timer, lazily (internal/idle: never
// sooner than IdleTimeout after the last frame, at most 1/16 of it later);
// a closing session keeps the close handshake's deadline.
func (s *session) extendReadDeadline() {
	s.deadlineMu.Lock()
	defer s.deadlineMu.Unlock()
	if s.closed() {
		return
	}
	if at, move := s.idleDeadline.Next(deadline(0), s.g.cfg.Limits.IdleTimeout); move {
		_ = s.conn.SetReadDeadline(at)
	}
}
