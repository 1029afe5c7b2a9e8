package main

import (
	"fmt"
	"io"
	"net"
	"net/url"
	"sync"
)

// dropProxy is a TCP relay in front of chatd for one client, so chatload
// can cut that client's connections the way a network does (no close
// frame) and watch the SDK's own reconnect and resync recover. The SDK
// dials by URL, so a relay per dropping client is how a drop can be aimed.
type dropProxy struct {
	ln     net.Listener
	target string // host:port

	mu    sync.Mutex
	conns map[net.Conn]struct{}

	wg sync.WaitGroup // the accept loop and every relay goroutine
}

// newDropProxy listens on a free local port and starts relaying to the
// host of targetURL. Close stops it and waits for its goroutines.
func newDropProxy(targetURL string) (*dropProxy, error) {
	u, err := url.Parse(targetURL)
	if err != nil {
		return nil, fmt.Errorf("proxy target: %w", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("proxy listen: %w", err)
	}
	p := &dropProxy{ln: ln, target: u.Host, conns: make(map[net.Conn]struct{})}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// URL is the base URL a client uses to reach chatd through the proxy.
func (p *dropProxy) URL() string { return "http://" + p.ln.Addr().String() }

func (p *dropProxy) accept() {
	defer p.wg.Done()
	for {
		in, err := p.ln.Accept()
		if err != nil {
			return // closed
		}
		out, err := net.Dial("tcp", p.target)
		if err != nil {
			in.Close()
			continue
		}
		if !p.track(in, out) {
			return
		}
		p.wg.Add(2)
		go p.pipe(in, out)
		go p.pipe(out, in)
	}
}

func (p *dropProxy) track(conns ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conns == nil { // closed
		for _, c := range conns {
			c.Close()
		}
		return false
	}
	for _, c := range conns {
		p.conns[c] = struct{}{}
	}
	return true
}

// pipe copies one direction; when either side ends, both are closed.
func (p *dropProxy) pipe(dst, src net.Conn) {
	defer p.wg.Done()
	io.Copy(dst, src)
	dst.Close()
	src.Close()
	p.mu.Lock()
	delete(p.conns, dst)
	delete(p.conns, src)
	p.mu.Unlock()
}

// drop cuts every connection through the proxy and reports how many
// client connections it cut.
func (p *dropProxy) drop() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		c.Close()
	}
	return len(p.conns) / 2
}

// Close stops accepting, cuts what is open and waits for the relays.
func (p *dropProxy) Close() {
	p.ln.Close()
	p.mu.Lock()
	for c := range p.conns {
		c.Close()
	}
	p.conns = nil
	p.mu.Unlock()
	p.wg.Wait()
}
