package api

import (
	"strings"
	"time"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/pkg/wire"
	"github.com/gofiber/fiber/v2"
)

// maxPresenceUsers bounds one GET /api/presence.
const maxPresenceUsers = 100

// presenceJSON is one user's entry in the GET /api/presence answer.
type presenceJSON struct {
	Online   bool       `json:"online"`
	LastSeen *time.Time `json:"last_seen,omitempty"`
}

// presence answers GET /api/presence?users=a,b with what the caller may
// know of each: online, or offline with last_seen when known, for the
// caller's contacts (the audience of live presence); anyone else, like a
// never-seen user, is just offline. There is no snapshot on the WebSocket:
// clients ask here.
func (s *Server) presence(c *fiber.Ctx) error {
	var users []string
	for _, u := range strings.Split(c.Query("users"), ",") {
		if u = strings.TrimSpace(u); u != "" {
			users = append(users, u)
		}
	}
	switch {
	case len(users) == 0:
		return writeError(c, fiber.StatusBadRequest, wire.CodeInvalid, "users: give 1-100 comma-separated user ids")
	case len(users) > maxPresenceUsers:
		return writeError(c, fiber.StatusBadRequest, wire.CodeInvalid, "users: at most 100 per call")
	}
	for _, u := range users {
		if err := chatd.CheckUserID("users: user", u); err != nil {
			return s.fail(c, err)
		}
	}
	states := make([]chatd.Presence, len(users))
	if s.cfg.Presence != nil {
		var err error
		if states, err = s.cfg.Presence.Lookup(c.UserContext(), identity(c).User, users); err != nil {
			return s.fail(c, err)
		}
	}
	out := make(map[string]presenceJSON, len(users))
	for i, u := range users {
		p := presenceJSON{Online: states[i].Online}
		if !p.Online && !states[i].LastSeen.IsZero() {
			ls := states[i].LastSeen.UTC()
			p.LastSeen = &ls
		}
		out[u] = p
	}
	return c.JSON(fiber.Map{"presence": out})
}
