package api

import (
	_ "embed"

	"github.com/gofiber/fiber/v2"
)

// openAPIDoc is the OpenAPI 3.1 description of every REST call. The REST
// tests validate each request they send and each answer they get against
// it, so a change to a handler that the document does not follow fails them.
//
//go:embed openapi.yaml
var openAPIDoc []byte

// OpenAPI returns the OpenAPI document chatd serves at /api/openapi.yaml.
// The caller must not modify the slice.
func OpenAPI() []byte { return openAPIDoc }

// openAPI serves the document without a token: it describes the API, it
// does not open it.
func (s *Server) openAPI(c *fiber.Ctx) error {
	c.Set(fiber.HeaderContentType, "application/yaml")
	return c.Send(openAPIDoc)
}
