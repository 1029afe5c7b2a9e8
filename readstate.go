package chatd

// ReadPosition is how far a user has read a chat: up to the message Upto,
// whose seq is Seq. It only moves forward, so a stale or reordered `read`
// cannot make a read chat look unread again.
type ReadPosition struct {
	Seq  int64
	Upto string
}

// UserChat is a chat as one member sees it in their chat list: the chat
// plus that member's read position and how much they have not read. It is
// its own type rather than fields of Chat because only the list computes
// them; a Chat answered elsewhere (create, add member) would carry zeros
// that look like real counts.
type UserChat struct {
	Chat
	// ReadSeq is the member's ReadPosition.Seq in this chat; 0 when they
	// never marked anything read.
	ReadSeq int64 `json:"read_seq"`
	// Unread counts the messages from others with a seq above ReadSeq
	// (still retained: a message pruned by retention is not counted).
	Unread int64 `json:"unread"`
}
