package api

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/pkg/wire"
	"github.com/gofiber/fiber/v2"
)

// Page sizes of GET /api/admin/webhooks/failed.
const (
	defaultFailedPage = 100
	maxFailedPage     = 1000
)

// failedPage is the body of GET /api/admin/webhooks/failed. Next is the
// after= of the next page, 0 on the last.
type failedPage struct {
	Failed []chatd.WebhookFailure `json:"failed"`
	Next   int64                  `json:"next"`
}

// webhooksFailed: GET /api/admin/webhooks/failed?endpoint=hook-…&after=ID&limit=N
// → the webhook events set aside after their last attempt, oldest first.
func (s *Server) webhooksFailed(c *fiber.Ctx) error {
	endpoint, limit, err := deadLetterQuery(c)
	if err != nil {
		return s.fail(c, err)
	}
	after, err := queryInt(c, "after", 0, 0, 1<<62)
	if err != nil {
		return s.fail(c, err)
	}
	ctx, cancel := s.storeCtx(c)
	defer cancel()
	failed, err := s.cfg.Webhooks.Failed(ctx, endpoint, after, limit)
	if err != nil {
		return s.fail(c, err)
	}
	page := failedPage{Failed: failed}
	if page.Failed == nil {
		page.Failed = []chatd.WebhookFailure{}
	}
	if len(failed) == limit {
		page.Next = failed[len(failed)-1].ID
	}
	return c.JSON(page)
}

// replayTimeout bounds a replay: one POST to the endpoint plus two store calls.
const replayTimeout = 30 * time.Second

// webhookReplay: POST /api/admin/webhooks/failed/{id}/replay → posts the
// dead letter once more; 204 when the endpoint took it (it leaves the dead
// letters), 502 with the endpoint's answer when not (it stays).
func (s *Server) webhookReplay(c *fiber.Ctx) error {
	id, err := strconv.ParseInt(c.Params("id"), 10, 64)
	if err != nil || id <= 0 {
		return writeError(c, fiber.StatusBadRequest, wire.CodeInvalid, "id must be a dead letter's positive integer id")
	}
	ctx, cancel := context.WithTimeout(c.UserContext(), replayTimeout)
	defer cancel()
	err = s.cfg.Webhooks.Replay(ctx, id)
	if errors.Is(err, chatd.ErrUnavailable) {
		// The admin needs the endpoint's answer to act on it.
		return writeError(c, fiber.StatusBadGateway, wire.CodeUnavailable, err.Error())
	}
	if err != nil {
		return s.fail(c, err)
	}
	return c.SendStatus(fiber.StatusNoContent)
}

// replayManyTimeout bounds a replay of many dead letters: the call answers
// with what it did by then, and the admin calls again for the rest.
const replayManyTimeout = time.Minute

// webhooksReplayMany: POST /api/admin/webhooks/failed/replay?endpoint=hook-…&limit=N
// → replays up to N dead letters oldest first, of one endpoint or of all;
// 200 with what it did, also when an endpoint refused (its later dead
// letters wait for the next call, in order).
func (s *Server) webhooksReplayMany(c *fiber.Ctx) error {
	endpoint, limit, err := deadLetterQuery(c)
	if err != nil {
		return s.fail(c, err)
	}
	ctx, cancel := context.WithTimeout(c.UserContext(), replayManyTimeout)
	defer cancel()
	rep, err := s.cfg.Webhooks.ReplayMany(ctx, endpoint, limit)
	if err != nil {
		return s.fail(c, err)
	}
	if rep.Stopped == nil {
		rep.Stopped = []chatd.WebhookReplayStop{}
	}
	return c.JSON(rep)
}

// requireWebhooks answers the dead-letter calls 404 on a node without
// webhooks.
func (s *Server) requireWebhooks(c *fiber.Ctx) error {
	if s.cfg.Webhooks == nil {
		return writeError(c, fiber.StatusNotFound, wire.CodeNotFound, "webhooks are not configured")
	}
	return c.Next()
}

// deadLetterQuery reads the endpoint= and limit= the dead-letter calls
// share. endpoint is optional: an endpoint's consumer name, as the dead
// letters name it: hook- and then the characters of an id (pkg/webhook's
// names), at most an id's length.
func deadLetterQuery(c *fiber.Ctx) (endpoint string, limit int, err error) {
	endpoint = c.Query("endpoint")
	if endpoint != "" && (!strings.HasPrefix(endpoint, "hook-") || !chatd.ValidChatID(endpoint)) {
		return "", 0, fmt.Errorf("endpoint %.80q: want an endpoint's consumer name (hook-…), as its dead letters name it: %w", endpoint, chatd.ErrInvalid)
	}
	n, err := queryInt(c, "limit", defaultFailedPage, 1, maxFailedPage)
	return endpoint, int(n), err
}

// queryInt parses an optional integer query parameter within [lo, hi].
func queryInt(c *fiber.Ctx, name string, def, lo, hi int64) (int64, error) {
	v := c.Query(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < lo || n > hi {
		return 0, fmt.Errorf("%s must be an integer from %d to %d: %w", name, lo, hi, chatd.ErrInvalid)
	}
	return n, nil
}
