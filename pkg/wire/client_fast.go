package wire

import "github.com/chatd/chatd/internal/jsonfast"

// clientKeys are the JSON names of clientJSON's fields.
var clientKeys = []string{"type", "chat", "cid", "body", "upto", "ids", "token", "target", "meta", "emoji", "on"}

// decodeClientFast fills w from data without reflection, for the shape
// every well-behaved client sends: one JSON object whose keys are exactly
// the field names (or unrelated names with a string value), with string
// values, a string array for ids, a boolean for on and an object or array
// for meta. It reports false for anything else (nulls, numbers, nested
// values outside meta, surrogate escapes, a key differing from a field name
// only in case, trailing bytes, malformed JSON), and the caller then
// decodes with encoding/json, so the outcome is always what encoding/json
// gives; FuzzDecodeFrame checks that the two agree. It runs on every frame
// a server reads: a send or an ack is decoded several times faster, with
// fewer allocations, than through reflection.
func decodeClientFast(data []byte, w *clientJSON) bool {
	p := jsonfast.NewParser(data)
	return p.Object(func(key []byte) bool { return clientField(p, key, w) }) && p.End()
}

// clientField decodes the value of key into w.
func clientField(p *jsonfast.Parser, key []byte, w *clientJSON) bool {
	var dst **string
	switch string(key) {
	case "type":
		return frameType(p, w)
	case "chat":
		dst = &w.Chat
	case "cid":
		dst = &w.CID
	case "body":
		dst = &w.Body
	case "upto":
		dst = &w.Upto
	case "token":
		dst = &w.Token
	case "target":
		dst = &w.Target
	case "emoji":
		dst = &w.Emoji
	case "ids":
		ids, ok := p.Strings()
		w.IDs = ids
		return ok
	case "on":
		on, ok := p.Bool()
		w.On = &on
		return ok
	case "meta":
		meta, ok := p.Composite()
		w.Meta = meta
		return ok
	default:
		if jsonfast.FoldsTo(key, clientKeys...) {
			return false
		}
		// An unrelated field (a client's own, e.g. a trace id): skipped
		// when it is a string, the usual case; anything else falls back.
		_, ok := p.String()
		return ok
	}
	s, ok := p.String()
	*dst = &s
	return ok
}

// frameTypes are the types of the frames a client sends. A frame's type
// field points at one of them rather than at a copy: no allocation for it
// on any frame. They are never written.
var frameTypes = [...]string{string(FrameSend), string(FrameAck), string(FrameRead), string(FramePing),
	string(FrameEdit), string(FrameDelete), string(FrameReact), string(FrameTyping), string(FrameAuth)}

// ClientFrameTypes is every frame type a client may send, as strings: a
// fresh slice, so the decoder's own table is never written.
func ClientFrameTypes() []string { return append([]string(nil), frameTypes[:]...) }

// frameType decodes the type field into w.
func frameType(p *jsonfast.Parser, w *clientJSON) bool {
	k, s, ok := p.StringIn(frameTypes[:])
	switch {
	case !ok:
		return false
	case k >= 0:
		w.Type = &frameTypes[k]
	default:
		unknown := s // only this one goes to the heap
		w.Type = &unknown
	}
	return true
}
