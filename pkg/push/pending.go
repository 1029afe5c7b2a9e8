package push

// pendingSet is one connection's stream sequences sent and not yet acked
// (the Tetris bookkeeping). Its pin is the minimum: an ack removes exactly
// one sequence, so an out-of-order ack can never lift the pin past a gap
// (docs/architecture.md, invariant 2). Sets are small (bounded by max-pending
// plus the messages pacing holds, pace.go), so a map and a linear minimum
// beat a tree.
type pendingSet map[uint64]*delivery

// pin returns the lowest pending sequence and true, or 0 and false when
// nothing is pending.
func (p pendingSet) pin() (uint64, bool) {
	var low uint64
	for seq := range p {
		if low == 0 || seq < low {
			low = seq
		}
	}
	return low, low != 0
}
