package main

import (
	"math"
	"testing"
)

// CPU per message is each party's CPU over the accepted count of the same
// span; a span with nothing accepted has no figure, and PostgreSQL's is
// left out (with why) when its processes could not be read at both ends.
func TestPerMessage(t *testing.T) {
	start := cpuMarks{postgres: 10, postgresOK: true, self: 5, accepted: 1000}
	stop := cpuMarks{postgres: 10.6, postgresOK: true, self: 5.8, accepted: 11000}
	got := perMessage(start, stop, 1.45)
	want := cpuCost{ChatdUS: 145, PostgresUS: 60, ChatloadUS: 80}
	if got == nil || math.Abs(got.ChatdUS-want.ChatdUS) > 1e-9 || math.Abs(got.PostgresUS-want.PostgresUS) > 1e-9 ||
		math.Abs(got.ChatloadUS-want.ChatloadUS) > 1e-9 || got.PostgresNote != "" {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	stop.postgresOK = false
	if got := perMessage(start, stop, 1.45); got == nil || got.PostgresUS != 0 || got.PostgresNote == "" {
		t.Errorf("without PostgreSQL at the end: got %+v, want no figure and a note", got)
	}
	if got := perMessage(start, start, 1); got != nil {
		t.Errorf("nothing accepted: got %+v, want nil", got)
	}
}
