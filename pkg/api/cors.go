package api

import (
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/cors"
)

// corsMaxAge is how long (seconds) a browser may cache a preflight answer.
const corsMaxAge = 600

// corsHandler answers CORS for /api from the origins of
// Config.AllowedOrigins, the same list the WebSocket's origin check uses, so
// the SDK works from another origin exactly where its WebSocket would. It
// returns nil when the list is empty: then REST is same-origin only, the
// browser's default, and a preflight gets no CORS headers (it is refused).
//
// Tokens travel in the Authorization header, never in cookies, so
// credentials stay off (which also makes "*" safe to honour).
func corsHandler(origins []string) fiber.Handler {
	if len(origins) == 0 {
		return nil
	}
	cfg := cors.Config{
		AllowMethods:  "GET,POST,PATCH,DELETE",
		AllowHeaders:  "Authorization,Content-Type",
		ExposeHeaders: "Retry-After,WWW-Authenticate",
		MaxAge:        corsMaxAge,
	}
	for _, o := range origins {
		if o == "*" {
			cfg.AllowOrigins = "*"
			return cors.New(cfg)
		}
	}
	// A function rather than cors' own list: it panics on an origin it
	// cannot parse, and this compares exactly as originAllowed does.
	cfg.AllowOriginsFunc = func(origin string) bool {
		for _, o := range origins {
			if strings.EqualFold(o, origin) {
				return true
			}
		}
		return false
	}
	return cors.New(cfg)
}
