// Package heldack decides which held JetStream deliveries a keep-alive
// tells "in progress". The notifier and the webhook sessions hold
// deliveries while they work on them; telling every held one at every
// keep-alive was a burst of acks for deliveries about to be acked anyway
// (docs/benchmarks-log.md, "The notifier's share of the webhooks' tail,
// and its keep-alive burst"). The keep-alive runs every third of the ack
// wait and tells only the deliveries held at least that long: a younger
// one is under two thirds of its ack wait old at the next run, which tells
// it then if it is still held.
package heldack

import "time"

// Every is how often a holder runs its keep-alive for an ack wait.
func Every(ackWait time.Duration) time.Duration {
	return max(ackWait/3, 10*time.Millisecond)
}

// Since is about when a delivery's ack wait began: when the stream stored
// it, or when it was taken if that is earlier (the server's clock may run
// ahead of ours). Earlier is safe: it only makes the delivery told sooner.
func Since(stored, taken time.Time) time.Time {
	if stored.Before(taken) {
		return stored
	}
	return taken
}

// Due reports whether a delivery held since since is told at now.
func Due(since, now time.Time, ackWait time.Duration) bool {
	return since.Before(now.Add(-ackWait / 3))
}
