package api

import (
	"github.com/chatd/chatd/pkg/wire"
)

// onEvent handles edit, delete and react frames exactly like a send: the
// same rate limit and credits, submitted to ingest (which checks the body
// and emoji), answered accepted or rejected through onResult after commit
// (G1); the store checks the target and the author.
func (s *session) onEvent(f *wire.ClientFrame) {
	if !s.admit(f.CID) {
		return
	}
	s.submit(f)
}
