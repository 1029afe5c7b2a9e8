package client_test

import (
	"net"
	"testing"

	"github.com/chatd/chatd/pkg/client"
	"github.com/chatd/chatd/pkg/node"
)

// A client whose first node cannot be reached moves on to the next URL,
// and its REST calls follow it there.
func TestIntegrationURLsMovesOnToAnotherNode(t *testing.T) {
	n := mustNode(t, node.Config{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	dead := "http://" + ln.Addr().String()
	ln.Close() // nothing listens there any more: every dial is refused

	c := mustClient(t, n, "alice", "", func(cfg *client.Config) {
		cfg.URL = dead
		cfg.URLs = []string{n.URL()}
	})
	run(t, c, false)
	waitConnected(t, c)
	if st := c.Stats(); st.DialFailures < 1 {
		t.Errorf("got %d dial failures, want at least 1 (the dead first URL)", st.DialFailures)
	}
	mustDirect(t, c, "bob") // REST goes to the node that answered
}
