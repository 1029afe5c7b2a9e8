package main

import (
	"flag"
	"testing"
)

// History is kept unless the operator sets --history-retention: deleting a
// self-hosted chat's messages is a choice, not a default.
func TestHistoryRetentionDefaultKeepsHistory(t *testing.T) {
	var s settings
	fs := flag.NewFlagSet("chatd", flag.ContinueOnError)
	registerFlags(fs, &s)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	if d := s.node.HistoryRetention; d != 0 {
		t.Fatalf("default --history-retention %v, want 0 (keep forever)", d)
	}
}
