package main

import (
	"strings"
	"testing"

	"github.com/chatd/chatd/pkg/node"
)

// --version exits 0 (nil) without starting anything: no data dir, no
// database, no listener is needed for it.
func TestVersionExitsCleanly(t *testing.T) {
	if err := run([]string{"--version", "--data-dir", "/nonexistent/never"}); err != nil {
		t.Fatalf("--version: %v, want nil", err)
	}
	if s := node.ReadBuildInfo().String(); !strings.HasPrefix(s, "chatd ") || !strings.Contains(s, "go1.") {
		t.Fatalf("version line %q, want chatd <version> … go1.x", s)
	}
}
