package chatd

// ReadPosition is how far a user has read a chat: up to the message Upto,
// whose seq is Seq. It only moves forward, so a stale or reordered `read`
// cannot make a read chat look unread again.
type ReadPosition struct {
	Seq  int64
	Upto string
}
