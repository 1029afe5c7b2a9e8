// Package testwait waits, in tests, for a condition that another goroutine
// or process makes true: the one polling helper of the repository's tests.
// A test about timing logic moves an injected clock instead; this is for
// outcomes that take however long the machine takes.
package testwait

import (
	"testing"
	"time"
)

// Patience is how long Until waits: long, since it only bounds a failing
// test on a loaded machine.
const Patience = 30 * time.Second

// poll is how often the condition is checked.
const poll = 10 * time.Millisecond

// For polls cond until it holds, failing t once within has passed.
func For(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, within)
		}
		time.Sleep(poll)
	}
}

// Until is For with Patience.
func Until(t testing.TB, what string, cond func() bool) {
	t.Helper()
	For(t, Patience, what, cond)
}
