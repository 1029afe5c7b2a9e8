package node_test

import (
	"testing"

	"github.com/chatd/chatd/pkg/node"
	"github.com/chatd/chatd/pkg/node/nodetest"
)

// A Start that fails after it began acquiring things returns the error and
// releases what it took; it used to panic closing a nil node (the named
// result is nil by the time the deferred cleanup runs), which hid every
// startup error, such as a --max-body-bytes no envelope can fit.
func TestStartFailureReturnsAnError(t *testing.T) {
	cfg := node.Config{
		DatabaseURL: "postgres://chatd@127.0.0.1:1/none?connect_timeout=1",
		NATSURL:     "nats://127.0.0.1:1",
		JWTSecret:   "secret", NodeID: "t",
	}
	n, err := nodetest.Start(t, cfg)
	if err == nil || n != nil {
		t.Fatalf("start against nothing: got %v, %v; want nil and an error", n, err)
	}
}
