// Package reclaim keeps the delivery stream bounded: it computes the Tetris
// floor (the lowest stream sequence anyone may still need) and purges the
// stream below it. It learns connection pins through a small interface, not
// by importing push.
package reclaim

// ConsumerFloor is one node consumer's contiguous acked prefix.
type ConsumerFloor struct {
	Name     string `json:"name"`
	AckFloor uint64 `json:"ack_floor"`
}

// Floor computes the purge floor: the lowest sequence that must be kept.
// Everything strictly below it is delivered-and-acked (or withdrawn) for
// every live node and connection. It is the minimum over node consumers of
// AckFloor+1 and over connection pins, clamped to [first, last+1]. A node's
// ack floor already covers messages its consumer has not delivered yet, so
// purging below the floor never skips an undelivered message. With no
// consumer and no pin nothing is waiting and the floor is last+1.
func Floor(first, last uint64, consumers []ConsumerFloor, pins []uint64) uint64 {
	floor := last + 1
	for _, c := range consumers {
		floor = min(floor, c.AckFloor+1)
	}
	for _, p := range pins {
		floor = min(floor, p)
	}
	if floor < first {
		floor = first
	}
	return floor
}
