package client

import (
	"fmt"

	"github.com/chatd/chatd"
)

// Start is where Config.TrackAll starts the chats of its first listing.
type Start int

const (
	// StartAtBeginning hands out each chat's whole retained history once.
	StartAtBeginning Start = iota
	// StartNow hands out only what comes after the first listing.
	StartNow
	// StartUnread hands out what the user has not marked read.
	StartUnread
)

func (s Start) String() string {
	switch s {
	case StartAtBeginning:
		return "beginning"
	case StartNow:
		return "now"
	case StartUnread:
		return "unread"
	}
	return fmt.Sprintf("Start(%d)", int(s))
}

// after is the seq after which ch is handed out when it is in the first
// listing.
func (s Start) after(ch chatd.UserChat) int64 {
	switch s {
	case StartNow:
		return ch.LastSeq
	case StartUnread:
		return ch.ReadSeq
	}
	return 0
}
