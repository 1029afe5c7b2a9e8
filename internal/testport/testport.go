// Package testport picks free loopback ports for tests that must name a port
// before the server that listens on it starts (a cluster's route list, a
// PostgreSQL command line). Every other test listens on :0.
package testport

import (
	"net"
	"testing"
)

// Free asks the kernel for n distinct free loopback ports. Each listener is
// held until all are picked, so no port repeats.
func Free(t testing.TB, n int) []int {
	t.Helper()
	ports := make([]int, 0, n)
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("testport: free port: %v", err)
		}
		defer ln.Close()
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	return ports
}
