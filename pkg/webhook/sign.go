package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"hash"
	"strconv"
	"sync"
)

// Sign returns the webhook-signature header value of body sent as message
// id at unix time ts: "v1," and the base64 of HMAC-SHA256(key,
// "id.ts.body"), as the Standard Webhooks specification defines it.
func Sign(key []byte, id string, ts int64, body []byte) string {
	return string(NewSigner(key).AppendSignature(nil, id, ts, body))
}

// Signer signs as Sign does with each of its keys, reusing the HMAC state
// between calls: an endpoint signs every event it posts. Safe for
// concurrent use.
type Signer struct {
	pool sync.Pool // of *macState
}

type macState struct {
	macs   []hash.Hash // one per key, in the keys' order
	sum    [sha256.Size]byte
	prefix []byte // "id.ts."
}

// NewSigner returns a Signer for keys (the bytes after whsec_, decoded).
// With more than one, a header carries a signature by each, separated by
// spaces, as the specification allows for rotating a secret: a receiver
// that verifies with any one of the keys accepts the request.
func NewSigner(keys ...[]byte) *Signer {
	own := make([][]byte, len(keys))
	for i, k := range keys {
		own[i] = append([]byte(nil), k...)
	}
	s := &Signer{}
	s.pool.New = func() any {
		st := &macState{macs: make([]hash.Hash, len(own))}
		for i, k := range own {
			st.macs[i] = hmac.New(sha256.New, k)
		}
		return st
	}
	return s
}

// AppendSignature appends the webhook-signature header value to dst.
func (s *Signer) AppendSignature(dst []byte, id string, ts int64, body []byte) []byte {
	st := s.pool.Get().(*macState)
	defer s.pool.Put(st)
	st.prefix = append(append(st.prefix[:0], id...), '.')
	st.prefix = append(strconv.AppendInt(st.prefix, ts, 10), '.')
	for i, mac := range st.macs {
		mac.Reset()
		mac.Write(st.prefix)
		mac.Write(body)
		if i > 0 {
			dst = append(dst, ' ')
		}
		dst = append(dst, "v1,"...)
		dst = base64.StdEncoding.AppendEncode(dst, mac.Sum(st.sum[:0]))
	}
	return dst
}

// WebhookID is the webhook-id of message msgID sent to the endpoint whose
// consumer is name: the same on every attempt, every node and a replay, so
// receivers dedupe by it.
func WebhookID(msgID, name string) string {
	return "msg_" + msgID + "_" + name[len(ConsumerPrefix):]
}
