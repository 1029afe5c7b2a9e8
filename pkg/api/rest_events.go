package api

import (
	"fmt"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/pkg/wire"
	"github.com/gofiber/fiber/v2"
)

// eventRoutes adds the REST calls of docs/protocol.md "Events (v2)": read
// one message, and edit, delete and react, which go through ingest like a
// send (same idempotency, membership and target rules, decided at commit).
func (s *Server) eventRoutes(api fiber.Router) {
	api.Get("/chats/:id/messages/:mid", s.getMessage)
	api.Patch("/chats/:id/messages/:mid", s.editMessage)
	api.Delete("/chats/:id/messages/:mid", s.deleteMessage)
	api.Post("/chats/:id/messages/:mid/reactions", s.reactMessage)
}

// messageParams are the :id and :mid of a message route, checked before any
// store call.
func messageParams(c *fiber.Ctx) (chat, msg string, err error) {
	if chat, err = chatParam(c); err != nil {
		return "", "", err
	}
	msg = c.Params("mid")
	if !wire.ValidMessageID(msg) {
		return "", "", fmt.Errorf("message id %.80q: %w", msg, chatd.ErrInvalid)
	}
	return chat, msg, nil
}

// getMessage: GET /api/chats/:id/messages/:mid, members only; the message in
// its current state (an event id answers the event).
func (s *Server) getMessage(c *fiber.Ctx) error {
	chat, mid, err := messageParams(c)
	if err != nil {
		return s.fail(c, err)
	}
	ctx, cancel := s.storeCtx(c)
	defer cancel()
	if err := s.cfg.Chats.IsMember(ctx, chat, identity(c).User); err != nil {
		return s.fail(c, err)
	}
	m, err := s.cfg.Chats.Message(ctx, chat, mid)
	if err != nil {
		return s.fail(c, err)
	}
	return c.JSON(m)
}

type editRequest struct {
	CID  string `json:"cid"`
	Body string `json:"body"`
}

// editMessage: PATCH /api/chats/:id/messages/:mid {"cid","body"}.
func (s *Server) editMessage(c *fiber.Ctx) error {
	var req editRequest
	if err := decodeBody(c, &req); err != nil {
		return s.fail(c, err)
	}
	return s.submitEvent(c, chatd.SendRequest{Kind: chatd.EventEdit, CID: req.CID, Body: req.Body})
}

// deleteMessage: DELETE /api/chats/:id/messages/:mid?cid=K.
func (s *Server) deleteMessage(c *fiber.Ctx) error {
	return s.submitEvent(c, chatd.SendRequest{Kind: chatd.EventDelete, CID: c.Query("cid")})
}

type reactRequest struct {
	CID   string `json:"cid"`
	Emoji string `json:"emoji"`
	On    *bool  `json:"on"`
}

// reactMessage: POST /api/chats/:id/messages/:mid/reactions {"cid","emoji","on"}.
func (s *Server) reactMessage(c *fiber.Ctx) error {
	var req reactRequest
	if err := decodeBody(c, &req); err != nil {
		return s.fail(c, err)
	}
	if req.On == nil {
		return s.fail(c, fmt.Errorf("on is required (true adds, false removes): %w", chatd.ErrInvalid))
	}
	return s.submitEvent(c, chatd.SendRequest{Kind: chatd.EventReaction, CID: req.CID, Emoji: req.Emoji, On: *req.On})
}

// submitEvent completes req with the route's chat, target and caller, sends
// it through ingest and answers like a REST send: 201 with the event, 200
// with the original for a resend of its cid.
func (s *Server) submitEvent(c *fiber.Ctx, req chatd.SendRequest) error {
	chat, mid, err := messageParams(c)
	if err != nil {
		return s.fail(c, err)
	}
	if !chatd.ValidCID(req.CID) {
		return s.fail(c, fmt.Errorf("cid must be 1-%d chars of [A-Za-z0-9_-]: %w", chatd.MaxCIDLen, chatd.ErrInvalid))
	}
	who := identity(c)
	req.Chat, req.Target, req.From, req.Device = chat, mid, who.User, who.Device
	return s.submit(c, req)
}
