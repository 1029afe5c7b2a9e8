package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"unicode/utf8"

	"github.com/chatd/chatd"
	"github.com/gofiber/fiber/v2"
)

// storeCtx bounds one store call made for a request.
func (s *Server) storeCtx(c *fiber.Ctx) (context.Context, context.CancelFunc) {
	return context.WithTimeout(c.UserContext(), s.cfg.StoreTimeout)
}

// decodeBody decodes a JSON request body into v; any failure is ErrInvalid.
// A body that is not UTF-8 is refused, naming the field that is not:
// encoding/json would replace the bytes with U+FFFD and store altered text.
// A body that is not an object is refused too: encoding/json reads `null`
// into a struct as nothing at all, which would make it a request with
// every field absent.
func decodeBody(c *fiber.Ctx, v any) error {
	body := c.Body()
	if !utf8.Valid(body) {
		return fmt.Errorf("%s is not valid UTF-8: send text encoded as UTF-8: %w", notUTF8Field(body), chatd.ErrInvalid)
	}
	if trimmed := bytes.TrimLeft(body, " \t\r\n"); len(trimmed) == 0 || trimmed[0] != '{' {
		return fmt.Errorf("request body must be a JSON object: %w", chatd.ErrInvalid)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("request body: %w", chatd.ErrInvalid)
	}
	return nil
}

// notUTF8Field names the top-level field of a JSON object body whose value
// is not UTF-8, or the request body as a whole.
func notUTF8Field(body []byte) string {
	var fields map[string]json.RawMessage
	if json.Unmarshal(body, &fields) == nil {
		for _, k := range slices.Sorted(maps.Keys(fields)) {
			if !utf8.Valid(fields[k]) {
				return k
			}
		}
	}
	return "request body"
}

// chatParam is the :id of a chat route, checked before any store call.
func chatParam(c *fiber.Ctx) (string, error) {
	id := c.Params("id")
	if !chatd.ValidChatID(id) {
		return "", fmt.Errorf("chat id %.80q: %w", id, chatd.ErrInvalid)
	}
	return id, nil
}

type createChatRequest struct {
	Members []string `json:"members"`
	Title   string   `json:"title"`
}

// check refuses a title or a member id that cannot be stored.
func (r createChatRequest) check() error {
	if err := chatd.CheckTitle(r.Title); err != nil {
		return err
	}
	for _, m := range r.Members {
		if err := chatd.CheckUserID("member", m); err != nil {
			return err
		}
	}
	return nil
}

// createChat: POST /api/chats → 201 with the group chat; the caller is a member.
func (s *Server) createChat(c *fiber.Ctx) error {
	var req createChatRequest
	if err := decodeBody(c, &req); err != nil {
		return s.fail(c, err)
	}
	if err := req.check(); err != nil {
		return s.fail(c, err)
	}
	return s.createGroup(c, identity(c).User, req.Title, req.Members)
}

// createGroup stores a group of creator and others and answers 201 with it.
func (s *Server) createGroup(c *fiber.Ctx, creator, title string, others []string) error {
	ctx, cancel := s.storeCtx(c)
	defer cancel()
	chat, err := s.cfg.Chats.CreateGroupChat(ctx, creator, title, others)
	if err != nil {
		return s.fail(c, err)
	}
	return c.Status(fiber.StatusCreated).JSON(chatJSON(chat))
}

type directChatRequest struct {
	User string `json:"user"`
}

// directChat: POST /api/chats/direct → 201 when created, 200 when it existed.
func (s *Server) directChat(c *fiber.Ctx) error {
	var req directChatRequest
	if err := decodeBody(c, &req); err != nil {
		return s.fail(c, err)
	}
	if err := chatd.CheckUserID("user", req.User); err != nil {
		return s.fail(c, err)
	}
	ctx, cancel := s.storeCtx(c)
	defer cancel()
	chat, created, err := s.cfg.Chats.DirectChat(ctx, identity(c).User, req.User)
	if err != nil {
		return s.fail(c, err)
	}
	status := fiber.StatusOK
	if created {
		status = fiber.StatusCreated
	}
	return c.Status(status).JSON(chatJSON(chat))
}

// listedChat is one chat of GET /api/chats: the caller's view of it and
// the read positions of its members (receipts are live only; this is how a
// client that was offline learns who read what).
type listedChat struct {
	chatd.UserChat
	MembersRead map[string]int64 `json:"members_read"`
}

// listChats: GET /api/chats → the caller's chats, each with the caller's
// read_seq and unread count and every member's read position.
func (s *Server) listChats(c *fiber.Ctx) error {
	ctx, cancel := s.storeCtx(c)
	defer cancel()
	chats, err := s.cfg.Chats.ListChats(ctx, identity(c).User)
	if err != nil {
		return s.fail(c, err)
	}
	ids := make([]string, len(chats))
	for i := range chats {
		ids[i] = chats[i].ID
	}
	read, err := s.cfg.Chats.MembersRead(ctx, ids)
	if err != nil {
		return s.fail(c, err)
	}
	out := make([]listedChat, len(chats))
	for i := range chats {
		chats[i].Chat = chatJSON(chats[i].Chat)
		out[i] = listedChat{UserChat: chats[i], MembersRead: read[chats[i].ID]}
		if out[i].MembersRead == nil {
			out[i].MembersRead = map[string]int64{} // an object, never null
		}
	}
	return c.JSON(fiber.Map{"chats": out})
}

// addMember: POST /api/chats/:id/members → 200 with the chat; members only,
// direct chats refuse with 409 (the store decides both under the chat lock).
func (s *Server) addMember(c *fiber.Ctx) error {
	by := identity(c).User
	return s.changeMembers(c, func(ctx context.Context, chat, user string) (chatd.Chat, error) {
		return s.cfg.Chats.AddMember(ctx, chat, by, user)
	})
}

// removeMember: DELETE /api/chats/:id/members/:user → 204; members only.
func (s *Server) removeMember(c *fiber.Ctx) error {
	by := identity(c).User
	return s.dropMember(c, func(ctx context.Context, chat, user string) error {
		return s.cfg.Chats.RemoveMember(ctx, chat, by, user)
	})
}

// changeMembers answers a member addition, {"user":"dave"} in the body, with
// the chat add returns; who may add is add's decision.
func (s *Server) changeMembers(c *fiber.Ctx, add func(ctx context.Context, chat, user string) (chatd.Chat, error)) error {
	id, err := chatParam(c)
	if err != nil {
		return s.fail(c, err)
	}
	var req directChatRequest
	if err := decodeBody(c, &req); err != nil {
		return s.fail(c, err)
	}
	if err := chatd.CheckUserID("user", req.User); err != nil {
		return s.fail(c, err)
	}
	ctx, cancel := s.storeCtx(c)
	defer cancel()
	chat, err := add(ctx, id, req.User)
	if err != nil {
		return s.fail(c, err)
	}
	return c.JSON(chatJSON(chat))
}

// dropMember answers a member removal (the user in the path) with 204; who
// may remove is remove's decision.
func (s *Server) dropMember(c *fiber.Ctx, remove func(ctx context.Context, chat, user string) error) error {
	id, err := chatParam(c)
	if err != nil {
		return s.fail(c, err)
	}
	user := c.Params("user")
	if err := chatd.CheckUserID("user", user); err != nil {
		return s.fail(c, err)
	}
	ctx, cancel := s.storeCtx(c)
	defer cancel()
	if err := remove(ctx, id, user); err != nil {
		return s.fail(c, err)
	}
	return c.SendStatus(fiber.StatusNoContent)
}

// chatJSON makes a nil member list encode as [] rather than null.
func chatJSON(c chatd.Chat) chatd.Chat {
	if c.Members == nil {
		c.Members = []string{}
	}
	return c
}
