package api

import (
	"encoding/binary"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/fasthttp/websocket"
)

// Frame opcodes (RFC 6455, section 5.2).
const (
	opContinuation = 0x0
	opText         = 0x1
	opBinary       = 0x2
	opClose        = 0x8
	opPing         = 0x9
	opPong         = 0xa
)

// maxControlPayload is the most a control frame may carry (RFC 6455, 5.5).
const maxControlPayload = 125

// maxKeptReadBuf: a message buffer grown past this by one large message is
// dropped at the next, so a connection keeps only a small buffer between
// messages.
const maxKeptReadBuf = 16 << 10

// frameEvent is what parse found complete.
type frameEvent uint8

const (
	evNone     frameEvent = iota // nothing yet: every byte given was taken
	evText                       // a text message, in frameParser.msg
	evBinary                     // a binary message, in frameParser.msg
	evTooLarge                   // a data message over the limit; the rest of it is skipped
	evPing                       // a ping; its payload is in frameParser.ctrl
	evPong                       // a pong
	evClose                      // a close; its payload is in frameParser.ctrl
)

// errProtocol is a client frame that breaks RFC 6455; its text is the
// reason the close frame (1002) gives, the library reader's wording.
type errProtocol string

func (e errProtocol) Error() string { return string(e) }

// frameParser reads a client's WebSocket frames from bytes as they come
// off the socket, whatever one read returned: part of a header, several
// frames, the middle of a payload. The session hands it each read's bytes
// (ws_read.go), so the socket is read only when the network poller says
// it holds bytes. It keeps the rules the library's reader kept: client
// frames are masked, no extension bits, control frames final and at most
// 125 bytes, fragments in order; data messages are assembled, never longer
// than limit (longer ones are reported once and skipped, not kept).
type frameParser struct {
	limit int  // most bytes of a data message
	drop  bool // data messages that start now are skipped (the session is closing)

	hdr  [14]byte // the frame header read so far
	nhdr int

	op     byte // the current frame's opcode
	fin    bool // the current frame ends its message
	key    [4]byte
	keyPos int   // the masking key's offset for the next payload byte
	left   int64 // payload bytes of the current frame still to come
	inBody bool  // the header is complete; the payload is being read

	msgOp    byte // the data message under way (opText, opBinary); 0: none
	skipping bool // its bytes are skipped: over the limit, or dropped
	msg      []byte
	ctrl     []byte // the current control frame's payload
}

// parse takes bytes from p until it completes something the reader acts on,
// and returns how many it took and what was completed. evNone means it took
// all of p and needs more. An error is a protocol violation: the connection
// must be closed with 1002 and read no further.
func (f *frameParser) parse(p []byte) (int, frameEvent, error) {
	used := 0
	for {
		if !f.inBody {
			n, done, err := f.readHeader(p[used:])
			used += n
			if err != nil || !done {
				return used, evNone, err
			}
			ev, err := f.startFrame()
			if err != nil || ev != evNone {
				return used, ev, err
			}
		}
		used += f.readBody(p[used:])
		if f.left > 0 {
			return used, evNone, nil
		}
		f.inBody = false
		if ev := f.endFrame(); ev != evNone || used == len(p) {
			return used, ev, nil
		}
	}
}

// readHeader takes header bytes from p; done once the header is complete.
// The first two bytes are checked as soon as they are in.
func (f *frameParser) readHeader(p []byte) (n int, done bool, err error) {
	for {
		need := 2
		if f.nhdr >= 2 {
			need = headerLen(f.hdr[1])
		}
		k := copy(f.hdr[f.nhdr:need], p[n:])
		f.nhdr += k
		n += k
		if f.nhdr < need {
			return n, false, nil
		}
		if need > 2 {
			return n, true, nil
		}
		if err := f.checkStart(f.hdr[0], f.hdr[1]); err != nil {
			return n, false, err
		}
	}
}

// headerLen is the length of a masked frame's header whose second byte is b1.
func headerLen(b1 byte) int {
	switch b1 & 0x7f {
	case 126:
		return 2 + 2 + 4
	case 127:
		return 2 + 8 + 4
	}
	return 2 + 4
}

// checkStart checks a frame's first two bytes as the library did,
// reporting every fault at once.
func (f *frameParser) checkStart(b0, b1 byte) error {
	var faults []string
	if b0&0x40 != 0 {
		faults = append(faults, "RSV1 set")
	}
	if b0&0x20 != 0 {
		faults = append(faults, "RSV2 set")
	}
	if b0&0x10 != 0 {
		faults = append(faults, "RSV3 set")
	}
	switch op := b0 & 0x0f; op {
	case opClose, opPing, opPong:
		if b1&0x7f > maxControlPayload {
			faults = append(faults, "len > 125 for control")
		}
		if b0&0x80 == 0 {
			faults = append(faults, "FIN not set on control")
		}
	case opText, opBinary:
		if f.msgOp != 0 {
			faults = append(faults, "data before FIN")
		}
	case opContinuation:
		if f.msgOp == 0 {
			faults = append(faults, "continuation after FIN")
		}
	default:
		faults = append(faults, "bad opcode "+strconv.Itoa(int(op)))
	}
	if b1&0x80 == 0 {
		faults = append(faults, "bad MASK")
	}
	if len(faults) > 0 {
		return errProtocol(strings.Join(faults, ", "))
	}
	return nil
}

// startFrame sets up the payload's reading from the complete header.
func (f *frameParser) startFrame() (frameEvent, error) {
	h := f.hdr[:f.nhdr]
	f.nhdr = 0
	f.op, f.fin = h[0]&0x0f, h[0]&0x80 != 0
	switch n := h[1] & 0x7f; n {
	case 126:
		f.left = int64(binary.BigEndian.Uint16(h[2:]))
	case 127:
		u := binary.BigEndian.Uint64(h[2:])
		if u > 1<<63-1 {
			return evNone, errProtocol("invalid payload length")
		}
		f.left = int64(u)
	default:
		f.left = int64(n)
	}
	copy(f.key[:], h[len(h)-4:])
	f.keyPos = 0
	f.inBody = true
	switch f.op {
	case opClose, opPing, opPong:
		f.ctrl = f.ctrl[:0]
		return evNone, nil
	case opText, opBinary:
		f.msgOp, f.skipping = f.op, f.drop
		if cap(f.msg) > maxKeptReadBuf {
			f.msg = nil
		}
		f.msg = f.msg[:0]
	}
	if f.skipping {
		return evNone, nil
	}
	if int64(len(f.msg))+f.left > int64(f.limit) {
		f.skipping = true
		return evTooLarge, nil
	}
	return evNone, nil
}

// readBody takes the current frame's payload bytes from p, unmasked.
func (f *frameParser) readBody(p []byte) int {
	k := int(min(int64(len(p)), f.left))
	f.left -= int64(k)
	switch {
	case f.op >= opClose:
		start := len(f.ctrl)
		f.ctrl = append(f.ctrl, p[:k]...)
		f.unmask(f.ctrl[start:])
	case f.skipping:
		f.keyPos += k
	default:
		start := len(f.msg)
		f.growMsg(k)
		f.msg = append(f.msg, p[:k]...)
		f.unmask(f.msg[start:])
	}
	return k
}

// growMsg makes room for n more bytes of the message, doubling, but never
// past the limit: the buffer is bounded by it, not by what append rounds
// up to (startFrame checked that the message fits).
func (f *frameParser) growMsg(n int) {
	if len(f.msg)+n <= cap(f.msg) {
		return
	}
	c := min(max(2*cap(f.msg), len(f.msg)+n, 512), f.limit)
	f.msg = append(make([]byte, 0, c), f.msg...)
}

// endFrame reports what the frame just read completes.
func (f *frameParser) endFrame() frameEvent {
	switch f.op {
	case opPing:
		return evPing
	case opPong:
		return evPong
	case opClose:
		return evClose
	}
	if !f.fin {
		return evNone
	}
	op, skipped := f.msgOp, f.skipping
	f.msgOp, f.skipping = 0, false
	switch {
	case skipped:
		return evNone
	case op == opText:
		return evText
	}
	return evBinary
}

// unmask removes the client's mask from b, the payload bytes that follow
// those already unmasked.
func (f *frameParser) unmask(b []byte) {
	if len(b) >= 16 {
		var k [8]byte
		for i := range k {
			k[i] = f.key[(f.keyPos+i)&3]
		}
		k64 := binary.LittleEndian.Uint64(k[:])
		for len(b) >= 8 {
			binary.LittleEndian.PutUint64(b, binary.LittleEndian.Uint64(b)^k64)
			b = b[8:]
			f.keyPos += 8
		}
	}
	for i := range b {
		b[i] ^= f.key[f.keyPos&3]
		f.keyPos++
	}
}

// closeOf reads a client's close frame payload: the code and text to echo,
// 1005 (no status) when it carries none.
func closeOf(payload []byte) (int, string, error) {
	if len(payload) < 2 {
		return websocket.CloseNoStatusReceived, "", nil
	}
	code := int(binary.BigEndian.Uint16(payload))
	if !validReceivedCloseCode(code) {
		return 0, "", errProtocol("bad close code " + strconv.Itoa(code))
	}
	text := string(payload[2:])
	if !utf8.ValidString(text) {
		return 0, "", errProtocol("invalid utf8 payload in close frame")
	}
	return code, text, nil
}

// validReceivedCloseCode: the codes a peer may send (RFC 6455, 7.4; the
// IANA registry), as the library checks them.
func validReceivedCloseCode(code int) bool {
	switch code {
	case websocket.CloseNormalClosure, websocket.CloseGoingAway, websocket.CloseProtocolError,
		websocket.CloseUnsupportedData, websocket.CloseInvalidFramePayloadData,
		websocket.ClosePolicyViolation, websocket.CloseMessageTooBig, websocket.CloseMandatoryExtension,
		websocket.CloseInternalServerErr, websocket.CloseServiceRestart, websocket.CloseTryAgainLater:
		return true
	}
	return code >= 3000 && code <= 4999
}
