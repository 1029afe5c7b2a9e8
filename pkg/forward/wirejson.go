package forward

import (
	"encoding/json"
	"errors"
	"strconv"
	"unicode/utf8"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/internal/jsonfast"
	"github.com/chatd/chatd/pkg/codec"
)

// The batch and its answer cross NATS as the JSON encoding/json writes and
// reads for request and reply, so nodes of either build read each other.
// Both ends write and read it without reflection: every forwarded send is
// encoded and decoded twice. A shape the fast reader does not take (a null,
// a key in another case, reactions) is read by encoding/json, so the result
// never differs from it (FuzzWireDecode holds the two equal).

// errBadMeta: a send's meta is not JSON, which encoding/json would refuse
// to write as well.
var errBadMeta = errors.New("meta is not valid JSON")

// appendJSON appends r's JSON.
func (r *request) appendJSON(dst []byte) ([]byte, error) {
	dst = append(dst, `{"sends":[`...)
	for i := range r.Sends {
		if i > 0 {
			dst = append(dst, ',')
		}
		var err error
		if dst, err = r.Sends[i].appendJSON(dst); err != nil {
			return nil, err
		}
	}
	return append(dst, "]}"...), nil
}

func (s *send) appendJSON(dst []byte) ([]byte, error) {
	dst = append(dst, `{"chat":`...)
	dst = jsonfast.AppendString(dst, s.Chat, false)
	dst = append(dst, `,"from":`...)
	dst = jsonfast.AppendString(dst, s.From, false)
	dst = jsonfast.AppendStringMember(dst, `,"device":`, s.Device, false)
	dst = append(dst, `,"cid":`...)
	dst = jsonfast.AppendString(dst, s.CID, false)
	dst = jsonfast.AppendStringMember(dst, `,"body":`, s.Body, false)
	dst = jsonfast.AppendStringMember(dst, `,"kind":`, string(s.Kind), false)
	dst = jsonfast.AppendStringMember(dst, `,"target":`, s.Target, false)
	if len(s.Meta) > 0 {
		// As the client sent it, byte for byte, so it is stored as a send
		// committed where it was made would be.
		if !json.Valid(s.Meta) {
			return nil, errBadMeta
		}
		dst = append(dst, `,"meta":`...)
		dst = append(dst, s.Meta...)
	}
	dst = jsonfast.AppendStringMember(dst, `,"emoji":`, s.Emoji, false)
	if s.On {
		dst = append(dst, `,"on":true`...)
	}
	if s.System {
		dst = append(dst, `,"system":true`...)
	}
	return append(dst, '}'), nil
}

// decode reads data as json.Unmarshal would into a T: through field, the
// reader of T's members, where the fast reader takes the shape; else by
// encoding/json. Its fast path copies string bytes as they are, and
// encoding/json replaces invalid UTF-8, so such data is left to it.
func decode[T any](data []byte, field func(p *jsonfast.Parser, key []byte, v *T) bool) (T, error) {
	var v T
	if utf8.Valid(data) {
		p := jsonfast.NewParser(data)
		if p.Object(func(key []byte) bool { return field(p, key, &v) }) && p.End() {
			return v, nil
		}
	}
	var fresh T
	err := json.Unmarshal(data, &fresh)
	return fresh, err
}

// decodeRequest reads a batch as json.Unmarshal would.
func decodeRequest(data []byte) (request, error) { return decode(data, requestField) }

func requestField(p *jsonfast.Parser, key []byte, r *request) bool {
	if string(key) != "sends" || r.Sends != nil {
		// Another key, or this one repeated (encoding/json decodes a
		// repeated array into the first one's elements): left to it.
		return false
	}
	r.Sends = make([]send, 0, 16)
	return p.Array(func() bool {
		var s send
		if !p.Object(func(key []byte) bool { return sendField(p, key, &s) }) {
			return false
		}
		r.Sends = append(r.Sends, s)
		return true
	})
}

func sendField(p *jsonfast.Parser, key []byte, s *send) bool {
	var ok bool
	switch string(key) {
	case "chat":
		s.Chat, ok = p.String()
	case "from":
		s.From, ok = p.String()
	case "device":
		s.Device, ok = p.String()
	case "cid":
		s.CID, ok = p.String()
	case "body":
		s.Body, ok = p.String()
	case "kind":
		var k string
		k, ok = p.String()
		s.Kind = chatd.EventKind(k)
	case "target":
		s.Target, ok = p.String()
	case "meta":
		s.Meta, ok = p.Composite()
	case "emoji":
		s.Emoji, ok = p.String()
	case "on":
		s.On, ok = p.Bool()
	case "system":
		s.System, ok = p.Bool()
	}
	return ok
}

// appendJSON appends r's JSON.
func (r *reply) appendJSON(dst []byte) []byte {
	dst = append(dst, `{"outcomes":[`...)
	for i := range r.Outcomes {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = r.Outcomes[i].appendJSON(dst)
	}
	return append(dst, "]}"...)
}

func (o *outcome) appendJSON(dst []byte) []byte {
	dst = append(dst, '{')
	// Each member after the first starts with a comma; a comma left at
	// the front is dropped below.
	mark := len(dst)
	if o.Message != nil {
		dst = append(dst, `,"msg":`...)
		dst = append(dst, '{')
		dst = codec.AppendMessage(dst, o.Message)
		dst = append(dst, '}')
	}
	dst = jsonfast.AppendStringMember(dst, `,"device":`, o.Device, false)
	if o.OutboxID != 0 {
		dst = append(dst, `,"outbox_id":`...)
		dst = strconv.AppendInt(dst, o.OutboxID, 10)
	}
	if len(o.Recipients) > 0 {
		dst = append(dst, `,"recipients":`...)
		dst = jsonfast.AppendStrings(dst, o.Recipients, false)
	}
	if o.Duplicate {
		dst = append(dst, `,"duplicate":true`...)
	}
	dst = jsonfast.AppendStringMember(dst, `,"err_kind":`, o.ErrKind, false)
	dst = jsonfast.AppendStringMember(dst, `,"err":`, o.Err, false)
	if len(dst) > mark {
		dst = append(dst[:mark], dst[mark+1:]...)
	}
	return append(dst, '}')
}

// decodeReply reads an answer as json.Unmarshal would.
func decodeReply(data []byte) (reply, error) { return decode(data, replyField) }

func replyField(p *jsonfast.Parser, key []byte, r *reply) bool {
	if string(key) != "outcomes" || r.Outcomes != nil {
		return false // another key, or this one repeated, as in requestField
	}
	r.Outcomes = make([]outcome, 0, 16)
	return p.Array(func() bool {
		var o outcome
		if !p.Object(func(key []byte) bool { return outcomeField(p, key, &o) }) {
			return false
		}
		r.Outcomes = append(r.Outcomes, o)
		return true
	})
}

func outcomeField(p *jsonfast.Parser, key []byte, o *outcome) bool {
	var ok bool
	switch string(key) {
	case "msg":
		if o.Message != nil {
			return false // a repeated key, as in requestField
		}
		m := new(chatd.Message)
		ok = p.Object(func(key []byte) bool { return codec.MessageField(p, key, m) })
		o.Message = m
	case "device":
		o.Device, ok = p.String()
	case "outbox_id":
		o.OutboxID, ok = p.Int64()
	case "recipients":
		o.Recipients, ok = p.Strings()
	case "duplicate":
		o.Duplicate, ok = p.Bool()
	case "err_kind":
		o.ErrKind, ok = p.String()
	case "err":
		o.Err, ok = p.String()
	}
	return ok
}
