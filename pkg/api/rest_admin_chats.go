package api

import (
	"fmt"

	"github.com/chatd/chatd"
	"github.com/gofiber/fiber/v2"
)

// The admin chat calls are what an application's backend does for its
// users, server to server (docs/integrations.md, "Bots and services"):
// create chats, change members and post system messages in chats it need
// not be a member of. Only Config.AdminUsers reach them (requireAdmin);
// they use the same store operations and the same ingest path as the
// members' own calls, so every rule but membership holds.
func (s *Server) adminChatRoutes(api fiber.Router) {
	admin := api.Group("/admin/chats", s.requireAdmin)
	admin.Post("", s.adminCreateChat)
	admin.Post("/direct", s.adminDirectChat)
	admin.Post("/:id/members", s.adminAddMember)
	admin.Delete("/:id/members/:user", s.adminRemoveMember)
	admin.Post("/:id/messages", s.adminSystemMessage)
}

// adminCreateChat: POST /api/admin/chats {"members":[…],"title":"…"} → 201
// with the group; the members are exactly those listed (at least one), the
// caller is not added.
func (s *Server) adminCreateChat(c *fiber.Ctx) error {
	var req createChatRequest
	if err := decodeBody(c, &req); err != nil {
		return s.fail(c, err)
	}
	if len(req.Members) == 0 {
		return s.fail(c, fmt.Errorf("members: list at least one user: %w", chatd.ErrInvalid))
	}
	if err := req.check(); err != nil {
		return s.fail(c, err)
	}
	// The store's creator is only the first member: the set is deduplicated.
	return s.createGroup(c, req.Members[0], req.Title, req.Members[1:])
}

type adminDirectRequest struct {
	Users []string `json:"users"`
}

// adminDirectChat: POST /api/admin/chats/direct {"users":["alice","bob"]} →
// 201 when created, 200 when it existed: the pair's one direct chat, the
// same one either user opens with POST /api/chats/direct.
func (s *Server) adminDirectChat(c *fiber.Ctx) error {
	var req adminDirectRequest
	if err := decodeBody(c, &req); err != nil {
		return s.fail(c, err)
	}
	if len(req.Users) != 2 || req.Users[0] == req.Users[1] {
		return s.fail(c, fmt.Errorf("users: list two different users: %w", chatd.ErrInvalid))
	}
	for _, u := range req.Users {
		if err := chatd.CheckUserID("user", u); err != nil {
			return s.fail(c, err)
		}
	}
	ctx, cancel := s.storeCtx(c)
	defer cancel()
	chat, created, err := s.cfg.Chats.DirectChat(ctx, req.Users[0], req.Users[1])
	if err != nil {
		return s.fail(c, err)
	}
	status := fiber.StatusOK
	if created {
		status = fiber.StatusCreated
	}
	return c.Status(status).JSON(chatJSON(chat))
}

// adminAddMember: POST /api/admin/chats/:id/members {"user":"dave"} → 200
// with the chat; a direct chat refuses with 409, as for members.
func (s *Server) adminAddMember(c *fiber.Ctx) error {
	return s.changeMembers(c, s.cfg.Chats.AdminAddMember)
}

// adminRemoveMember: DELETE /api/admin/chats/:id/members/:user → 204.
func (s *Server) adminRemoveMember(c *fiber.Ctx) error {
	return s.dropMember(c, s.cfg.Chats.AdminRemoveMember)
}

// adminSystemMessage: POST /api/admin/chats/:id/messages {"cid","body","meta"}
// → 201 {"id","seq","cid","ts"}, 200 for a resend of its cid. The message
// is from the caller, who need not be a member; it is an ordinary message
// otherwise, through ingest like every send, so it takes the chat's next
// seq, is delivered live and kept in history (G1–G3).
func (s *Server) adminSystemMessage(c *fiber.Ctx) error {
	return s.postMessageAs(c, true)
}
