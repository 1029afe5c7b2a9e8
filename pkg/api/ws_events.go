package api

import (
	"github.com/chatd/chatd"
	"github.com/chatd/chatd/pkg/ingest"
	"github.com/chatd/chatd/pkg/wire"
)

// onEvent handles edit, delete and react frames exactly like a send: the
// same rate limit and credits, submitted to ingest, answered accepted or
// rejected through onResult after commit (G1). Ingest checks the body and
// emoji sizes; the store checks the target and the author.
func (s *session) onEvent(f wire.ClientFrame) {
	if !s.admit(f.CID) {
		return
	}
	if f.Type == wire.FrameEdit {
		if err := chatd.CheckBody(f.Body, s.g.cfg.Limits.MaxBodyBytes); err != nil {
			s.limits.returnCredit()
			s.reject(f.CID, rejectCode(err), err.Error())
			return
		}
	}
	cid := f.CID
	req := ingest.Request{Chat: f.Chat, From: s.id.User, Device: s.id.Device, CID: cid,
		Kind: f.Type.EventKind(), Target: f.Target, Body: f.Body, Emoji: f.Emoji, On: f.On}
	err := s.g.cfg.Ingest.Submit(req, func(r ingest.Result) { s.onResult(cid, r) })
	if err != nil {
		s.limits.returnCredit()
		s.reject(cid, rejectCode(err), clientMessage(err))
	}
}
