package api

import (
	"io"
	"os"
	"syscall"
	"time"
)

// readBufferSize is the buffer one read of a socket fills: several typical
// client frames, so a burst is read at once.
const readBufferSize = 4 << 10

// readSocket reads the socket itself and hands each read's bytes to the
// frame parser, until the read ends. It reads only once the network poller
// reports bytes: Go's own reads, and the library's through them, read again
// after each frame and find the socket empty before they wait, a second
// system call for every frame a client sends.
//
// One RawConn.Read lasts while the reads empty the socket: after such a
// read the function returns false, to wait for the poller. After a read
// that filled the buffer it returns true: the poller would not report the
// bytes already there, so the next RawConn.Read reads them at once, and on
// its way checks the read deadline, which reads of the socket do not.
func (s *session) readSocket() error {
	for {
		var readErr error
		err := s.raw.Read(func(fd uintptr) bool {
			n, err := s.readOnce(int(fd))
			switch {
			case err == syscall.EAGAIN:
				return false
			case err != nil:
				readErr = err
				return true
			}
			return n == readBufferSize
		})
		if readErr != nil {
			return readErr
		}
		if err != nil {
			return err
		}
	}
}

// readOnce reads the socket once into a buffer lent for the read and acts
// on the frames it completes. It returns syscall.EAGAIN when the socket is
// empty, io.EOF when the client closed it, and the frames' error. It holds
// no defer and few locals: each frame is handled from below it, and a
// deeper stack there grows every busy session's goroutine stack.
func (s *session) readOnce(fd int) (int, error) {
	bp, _ := s.g.readBuffers.Get().(*[]byte)
	if bp == nil {
		b := make([]byte, readBufferSize)
		bp = &b
	}
	n, err := syscall.Read(fd, *bp)
	for err == syscall.EINTR {
		n, err = syscall.Read(fd, *bp)
	}
	switch {
	case err == syscall.EAGAIN:
	case err != nil:
		err = os.NewSyscallError("read", err)
	case n == 0:
		err = io.EOF
	default:
		err = s.readBytes((*bp)[:n])
	}
	s.g.readBuffers.Put(bp)
	return n, err
}

// readConn reads through the connection (a socket without a file
// descriptor: TLS, a pipe in tests), as Go reads.
func (s *session) readConn() error {
	nc := s.conn.NetConn()
	buf := make([]byte, readBufferSize)
	for {
		n, err := nc.Read(buf)
		if n > 0 {
			if err := s.readBytes(buf[:n]); err != nil {
				return err
			}
		}
		if err != nil {
			return err
		}
	}
}

// takeEarlyBytes takes what a client sent right behind its upgrade request
// and the HTTP server read ahead: readSocket reads past that server's
// buffer. A read deadline in the past makes the connection's reads return
// what is buffered above the socket and then fail, without waiting. It runs
// before the session is registered, when nothing else moves the deadline.
func (s *session) takeEarlyBytes() {
	if s.raw == nil {
		return // readConn reads through the buffer
	}
	nc := s.conn.NetConn()
	if nc.SetReadDeadline(time.Unix(1, 0)) != nil {
		return
	}
	var early []byte
	buf := make([]byte, 512)
	for {
		n, err := nc.Read(buf)
		early = append(early, buf[:n]...)
		if err != nil || n == 0 {
			break
		}
	}
	_ = nc.SetReadDeadline(time.Time{})
	s.early = early
}
