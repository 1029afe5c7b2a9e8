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

// Signer signs as Sign does with one key, reusing its HMAC state between
// calls: an endpoint signs every event it posts. Safe for concurrent use.
type Signer struct {
	pool sync.Pool // of *macState
}

type macState struct {
	mac    hash.Hash
	sum    [sha256.Size]byte
	prefix []byte // "id.ts."
}

// NewSigner returns a Signer for key (the bytes after whsec_, decoded).
func NewSigner(key []byte) *Signer {
	key = append([]byte(nil), key...)
	s := &Signer{}
	s.pool.New = func() any { return &macState{mac: hmac.New(sha256.New, key)} }
	return s
}

// AppendSignature appends the webhook-signature header value to dst.
func (s *Signer) AppendSignature(dst []byte, id string, ts int64, body []byte) []byte {
	st := s.pool.Get().(*macState)
	defer s.pool.Put(st)
	st.mac.Reset()
	st.prefix = append(append(st.prefix[:0], id...), '.')
	st.prefix = append(strconv.AppendInt(st.prefix, ts, 10), '.')
	st.mac.Write(st.prefix)
	st.mac.Write(body)
	dst = append(dst, "v1,"...)
	return base64.StdEncoding.AppendEncode(dst, st.mac.Sum(st.sum[:0]))
}

// WebhookID is the webhook-id of message msgID sent to the endpoint whose
// consumer is name: the same on every attempt, every node and a replay, so
// receivers dedupe by it.
func WebhookID(msgID, name string) string {
	return "msg_" + msgID + "_" + name[len(ConsumerPrefix):]
}
