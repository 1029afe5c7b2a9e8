// Package testproxy is a TCP relay for tests that must cut a network link
// the way a network does: no close handshake, new connections refused,
// then restored. Tests put it between a chatd node and its NATS server (or
// between a client and chatd) to prove the node notices and repairs itself.
//
//	p := testproxy.Start(t, natsAddr)
//	cfg.NATSURL = p.URL("nats")
//	p.Cut()      // every relayed connection dropped, new ones refused
//	p.Restore()  // accepts again
//	p.Stall()    // connections stay open, but nothing gets through
//	p.Resume()   // what was held back flows again, in order
package testproxy

import (
	"net"
	"sync"
	"testing"
)

// Proxy relays TCP connections from a loopback port to a target address.
// It is safe for concurrent use. Start registers its Close with t.Cleanup.
type Proxy struct {
	ln     net.Listener
	target string

	mu      sync.Mutex
	cut     bool
	stalled bool
	flowing *sync.Cond // on mu: broadcast when a stall ends or a cut drops its connections
	conns   map[net.Conn]struct{}

	wg sync.WaitGroup // the accept loop and every copy goroutine
}

// Start listens on a free loopback port and relays every accepted
// connection to target (host:port).
func Start(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("testproxy: listen: %v", err)
	}
	p := &Proxy{ln: ln, target: target, conns: make(map[net.Conn]struct{})}
	p.flowing = sync.NewCond(&p.mu)
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.Close)
	return p
}

// Addr is the proxy's host:port.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// URL is the proxy's address with a scheme, e.g. URL("nats") or URL("http").
func (p *Proxy) URL(scheme string) string { return scheme + "://" + p.Addr() }

// Cut drops every relayed connection at once (both sides see a reset or
// EOF, never a protocol goodbye) and refuses new ones until Restore.
func (p *Proxy) Cut() {
	p.mu.Lock()
	p.cut = true
	conns := p.conns
	p.conns = make(map[net.Conn]struct{})
	p.flowing.Broadcast()
	p.mu.Unlock()
	for c := range conns {
		_ = c.Close()
	}
}

// Restore makes the proxy relay new connections again.
func (p *Proxy) Restore() {
	p.mu.Lock()
	p.cut = false
	p.mu.Unlock()
}

// Stall stops relaying without closing anything, as a link that stops
// delivering does: each direction holds what it read until Resume, and
// the kernel's buffers hold the rest. Neither side sees an error.
func (p *Proxy) Stall() {
	p.mu.Lock()
	p.stalled = true
	p.mu.Unlock()
}

// Resume ends a Stall: what was held back is relayed, in order.
func (p *Proxy) Resume() {
	p.mu.Lock()
	p.stalled = false
	p.flowing.Broadcast()
	p.mu.Unlock()
}

// Close stops listening, drops every connection and waits for the
// proxy's goroutines.
func (p *Proxy) Close() {
	_ = p.ln.Close()
	p.Cut()
	p.wg.Wait()
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		in, err := p.ln.Accept()
		if err != nil {
			return // listener closed
		}
		p.mu.Lock()
		cut := p.cut
		p.mu.Unlock()
		if cut {
			_ = in.Close()
			continue
		}
		out, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = in.Close()
			continue
		}
		if !p.track(in, out) {
			_ = in.Close()
			_ = out.Close()
			continue
		}
		p.wg.Add(2)
		go p.pipe(in, out)
		go p.pipe(out, in)
	}
}

// track records both ends unless a Cut raced the dial.
func (p *Proxy) track(conns ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cut {
		return false
	}
	for _, c := range conns {
		p.conns[c] = struct{}{}
	}
	return true
}

// pipe copies one direction, holding each read while the proxy stalls;
// when either side ends both are closed.
func (p *Proxy) pipe(dst, src net.Conn) {
	defer p.wg.Done()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if !p.waitFlowing(dst) {
				break
			}
			if _, werr := dst.Write(buf[:n]); werr != nil { // a net.Conn writes all of it or fails
				break
			}
		}
		if err != nil {
			break // any end of the copy ends the link
		}
	}
	_ = dst.Close()
	_ = src.Close()
	p.mu.Lock()
	delete(p.conns, dst)
	delete(p.conns, src)
	p.mu.Unlock()
}

// waitFlowing waits out a stall; false when a cut dropped c meanwhile.
func (p *Proxy) waitFlowing(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.stalled {
		if _, ok := p.conns[c]; !ok {
			return false
		}
		p.flowing.Wait()
	}
	_, ok := p.conns[c]
	return ok
}
