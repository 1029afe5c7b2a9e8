package wire

import (
	"github.com/chatd/chatd/internal/jsonfast"
	"github.com/chatd/chatd/pkg/codec"
)

// decodeServerFast fills f from data without reflection, for the frames a
// client reads once per delivery (msg, accepted, receipt, typing,
// presence): one object whose keys are exactly the field names, with
// scalar values. Anything else (hello's nested limits, reaction sets on
// history reads, unknown or case-folded keys, nulls) reports false, and the
// caller decodes with encoding/json, so the result never differs from it;
// FuzzDecodeFrame checks that the two agree. The Go client and chatload
// decode every delivery through here.
func decodeServerFast(data []byte, f *ServerFrame) bool {
	p := jsonfast.NewParser(data)
	return p.Object(func(key []byte) bool { return serverField(p, key, f) }) && p.End()
}

func serverField(p *jsonfast.Parser, key []byte, f *ServerFrame) bool {
	var ok bool
	switch string(key) {
	case "type":
		var s string
		s, ok = p.String()
		f.Type = FrameType(s)
	case "user":
		f.User, ok = p.String()
	case "device":
		f.Device, ok = p.String()
	case "code":
		var s string
		s, ok = p.String()
		f.Code = Code(s)
	case "error":
		f.Error, ok = p.String()
	case "upto":
		f.Upto, ok = p.String()
	case "exp":
		f.Exp, ok = p.Int64()
	case "online":
		f.Online, ok = p.Bool()
	case "last_seen":
		ok = p.Time(&f.LastSeen)
	default:
		ok = codec.MessageField(p, key, &f.Message)
	}
	return ok
}
