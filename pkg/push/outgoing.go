package push

import (
	"sync/atomic"

	"github.com/chatd/chatd"
)

// Outgoing is one message on its way to this node's connections. Every
// recipient connection of a fan-out (and of its redeliveries) is handed the
// same *Outgoing, which nobody changes, so the first writer to encode the
// frame encodes it for all: a group message to 50 members was copied 50
// times and encoded 50 times, once per connection.
type Outgoing struct {
	chatd.Message
	frame atomic.Pointer[[]byte]
}

// NewOutgoing wraps a copy of m.
func NewOutgoing(m *chatd.Message) *Outgoing { return &Outgoing{Message: *m} }

// Frame returns the message's encoded frame, calling encode the first time.
// Callers must not modify the result. Writers racing on the first call may
// each encode; the frames are equal and one is kept.
func (o *Outgoing) Frame(encode func(*chatd.Message) []byte) []byte {
	if f := o.frame.Load(); f != nil {
		return *f
	}
	f := encode(&o.Message)
	o.frame.CompareAndSwap(nil, &f)
	return f
}
