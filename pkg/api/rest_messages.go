package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/pkg/wire"
	"github.com/gofiber/fiber/v2"
)

// historyPage is the body of GET /api/chats/:id/messages. Next is the id to
// pass as `since` for the following page, nil (JSON null) when there is none.
type historyPage struct {
	Messages []chatd.Message `json:"messages"`
	Next     *string         `json:"next"`
}

// historyUpPage is the body of a `before` page: Prev is the `before` of the
// next older page, nil (JSON null) once the oldest retained message is in.
type historyUpPage struct {
	historyPage
	Prev *int64 `json:"prev"`
}

// history: GET /api/chats/:id/messages?since=ID|after_seq=N|before=N&limit=N,
// members only.
func (s *Server) history(c *fiber.Ctx) error {
	id, err := chatParam(c)
	if err != nil {
		return s.fail(c, err)
	}
	q, err := historyQuery(c)
	if err != nil {
		return s.fail(c, err)
	}
	ctx, cancel := s.storeCtx(c)
	defer cancel()
	if err := s.cfg.Chats.IsMember(ctx, id, identity(c).User); err != nil {
		return s.fail(c, err)
	}
	msgs, more, err := s.cfg.Chats.History(ctx, id, q)
	if err != nil {
		return s.fail(c, err)
	}
	page := historyPage{Messages: msgs}
	if page.Messages == nil {
		page.Messages = []chatd.Message{}
	}
	if q.BeforeSeq > 0 {
		// Messages at and above `before` exist or may come, so the forward
		// cursor is the page's end whenever it has one; more means older.
		up := historyUpPage{historyPage: page}
		if len(msgs) > 0 {
			next := msgs[len(msgs)-1].ID
			up.Next = &next
			if more {
				up.Prev = &msgs[0].Seq
			}
		}
		return c.JSON(up)
	}
	if more && len(msgs) > 0 {
		next := msgs[len(msgs)-1].ID
		page.Next = &next
	}
	return c.JSON(page)
}

// historyParams are the query parameters history knows; any other is a 400
// rather than ignored, so a misspelt cursor cannot silently page from the
// start.
var historyParams = []string{"since", "after_seq", "before", "limit"}

// historyQuery parses since/after_seq/before/limit. Bad values are 400
// rather than silently defaulted: a client paging with a broken cursor must
// learn of it.
func historyQuery(c *fiber.Ctx) (chatd.HistoryQuery, error) {
	q := chatd.HistoryQuery{Limit: chatd.DefaultHistoryLimit}
	if err := onlyParams(c, historyParams); err != nil {
		return q, err
	}
	since, afterSeq, before := c.Query("since"), c.Query("after_seq"), c.Query("before")
	if since != "" && afterSeq != "" {
		return q, fmt.Errorf("since and after_seq are exclusive: %w", chatd.ErrInvalid)
	}
	if before != "" && (since != "" || afterSeq != "") {
		return q, fmt.Errorf("before excludes since and after_seq: %w", chatd.ErrInvalid)
	}
	if since != "" {
		if !wire.ValidMessageID(since) {
			return q, fmt.Errorf("since %.80q is not a message id: %w", since, chatd.ErrInvalid)
		}
		q.SinceID = since
	}
	if afterSeq != "" {
		n, err := strconv.ParseInt(afterSeq, 10, 64)
		if err != nil || n < 0 {
			return q, fmt.Errorf("after_seq %.32q is not a seq (0 or more): %w", afterSeq, chatd.ErrInvalid)
		}
		q.AfterSeq = n
	}
	if before != "" {
		n, err := strconv.ParseInt(before, 10, 64)
		if err != nil || n < 1 {
			return q, fmt.Errorf("before %.32q is not a seq (1 or more): %w", before, chatd.ErrInvalid)
		}
		q.BeforeSeq = n
	}
	if limit := c.Query("limit"); limit != "" {
		n, err := pageLimit(limit)
		if err != nil {
			return q, err
		}
		q.Limit = n
	}
	return q, nil
}

// pageLimit parses a limit of 1 or more, capped at chatd.MaxHistoryLimit however
// large it is written (also beyond int64), as the contract says.
func pageLimit(v string) (int, error) {
	n, err := strconv.ParseUint(v, 10, 64)
	if errors.Is(err, strconv.ErrRange) {
		return chatd.MaxHistoryLimit, nil
	}
	if err != nil || n < 1 {
		return 0, fmt.Errorf("limit %.32q is not a number from 1 (values over %d are capped): %w", v, chatd.MaxHistoryLimit, chatd.ErrInvalid)
	}
	return int(min(n, chatd.MaxHistoryLimit)), nil
}

// onlyParams fails with chatd.ErrInvalid naming every query parameter of
// c that is not in known.
func onlyParams(c *fiber.Ctx, known []string) error {
	var unknown []string
	for k := range c.Context().QueryArgs().All() {
		if name := string(k); !slices.Contains(known, name) && !slices.Contains(unknown, name) && len(unknown) < 5 {
			unknown = append(unknown, name)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	for i, name := range unknown {
		unknown[i] = fmt.Sprintf("%.32q", name)
	}
	return fmt.Errorf("unknown query parameter %s (known: %s): %w", strings.Join(unknown, ", "), strings.Join(known, ", "), chatd.ErrInvalid)
}

type postMessageRequest struct {
	CID  string `json:"cid"`
	Body string `json:"body"`
	// Meta is kept as the client encoded it: its limit counts those bytes.
	Meta json.RawMessage `json:"meta"`
}

// postMessageResponse answers a REST send: 201 for a new message, 200 with
// the original for a resend of the same cid.
type postMessageResponse struct {
	ID  string `json:"id"`
	Seq int64  `json:"seq"`
	CID string `json:"cid"`
	TS  string `json:"ts"`
}

// postMessage: POST /api/chats/:id/messages. It goes through ingest like a
// WebSocket send, so the body's checks (SendRequest.Check, in ingest),
// idempotency on (sender, cid) and membership (checked in the committing
// transaction) are the same on both paths.
func (s *Server) postMessage(c *fiber.Ctx) error {
	return s.postMessageAs(c, false)
}

// postMessageAs submits the body's message from the caller; system marks an
// admin's message into a chat the caller need not be a member of.
func (s *Server) postMessageAs(c *fiber.Ctx, system bool) error {
	id, err := chatParam(c)
	if err != nil {
		return s.fail(c, err)
	}
	var req postMessageRequest
	if err := decodeBody(c, &req); err != nil {
		return s.fail(c, err)
	}
	if !chatd.ValidCID(req.CID) {
		return s.fail(c, fmt.Errorf("cid must be 1-%d chars of [A-Za-z0-9_-]: %w", chatd.MaxCIDLen, chatd.ErrInvalid))
	}
	who := identity(c)
	return s.submit(c, chatd.SendRequest{Chat: id, From: who.User, Device: who.Device, CID: req.CID, Body: req.Body, Meta: req.Meta, System: system})
}

// submit sends req through ingest and answers like POST …/messages: 201
// with the stored event, 200 for a resend of its cid, or the mapped error.
// Every REST call that stores an event (send, edit, delete, react) ends here.
func (s *Server) submit(c *fiber.Ctx, req chatd.SendRequest) error {
	ctx, cancel := s.storeCtx(c)
	defer cancel()
	res, err := s.cfg.Ingest.Send(ctx, req)
	if err == nil {
		err = res.Err
	}
	if err != nil {
		return s.fail(c, err)
	}
	status := fiber.StatusCreated
	if res.Duplicate {
		status = fiber.StatusOK
	}
	m := res.Message
	return c.Status(status).JSON(postMessageResponse{ID: m.ID, Seq: m.Seq, CID: m.CID, TS: m.TS.Format(time.RFC3339Nano)})
}
