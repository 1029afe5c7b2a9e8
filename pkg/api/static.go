package api

import (
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"io/fs"
	"mime"
	"path"
	"strings"

	"github.com/gofiber/fiber/v2"
)

// staticFile is one browser file, read once at New: the files are embedded
// in the binary and small, so serving them is a map lookup, and the ETag (a
// hash of the content) is computed once.
type staticFile struct {
	body  []byte
	ctype string
	etag  string
}

// staticFiles maps a URL path ("/index.html", "/sdk/index.js") to its file.
// Read-only after New, so safe for concurrent use.
type staticFiles map[string]*staticFile

// load reads every regular file of fsys under the URL prefix (""
// or "/sdk"). A nil fsys adds nothing.
func (files staticFiles) load(fsys fs.FS, prefix string) error {
	if fsys == nil {
		return nil
	}
	return fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := fs.ReadFile(fsys, p)
		if err != nil {
			return fmt.Errorf("api: read static file %s: %w", p, err)
		}
		sum := sha256.Sum256(body)
		files[prefix+"/"+p] = &staticFile{
			body:  body,
			ctype: contentType(p),
			etag:  `"` + base64.RawURLEncoding.EncodeToString(sum[:12]) + `"`,
		}
		return nil
	})
}

// staticTypes are the content types of the files chatd serves. ES modules
// must come as JavaScript or the browser refuses to run them, so these do
// not depend on the host's mime tables; anything else falls back to them.
var staticTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".mjs":  "text/javascript; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".json": "application/json",
	".map":  "application/json",
	".svg":  "image/svg+xml",
	".png":  "image/png",
	".ico":  "image/x-icon",
	".txt":  "text/plain; charset=utf-8",
	".ts":   "text/plain; charset=utf-8",
}

func contentType(name string) string {
	ext := strings.ToLower(path.Ext(name))
	if t, ok := staticTypes[ext]; ok {
		return t
	}
	if t := mime.TypeByExtension(ext); t != "" {
		return t
	}
	return "application/octet-stream"
}

// pageCSP is the Content-Security-Policy of the demo's pages: scripts,
// styles and connections (REST and the WebSocket) from chatd itself only,
// no inline script, and no framing (the page holds a token).
const pageCSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// serveStatic answers GET and HEAD for the embedded browser files: the demo
// at / (index.html for /) and the SDK under /sdk/. A path that names no file
// falls through to the 404 of no route.
//
// Cache-Control is no-cache with an ETag: the files have no content hash in
// their names (there is no build step), so a browser revalidates each time
// and gets a 304 unless the binary, and so the file, changed.
func (s *Server) serveStatic(c *fiber.Ctx) error {
	p := c.Path()
	if strings.HasSuffix(p, "/") {
		p += "index.html"
	}
	f := s.static[p]
	if f == nil {
		return c.Next()
	}
	h := &c.Response().Header
	h.Set(fiber.HeaderCacheControl, "no-cache")
	h.Set(fiber.HeaderETag, f.etag)
	h.Set(fiber.HeaderXContentTypeOptions, "nosniff")
	if strings.HasPrefix(f.ctype, "text/html") {
		h.Set(fiber.HeaderContentSecurityPolicy, pageCSP)
		// The token is in the fragment, which no Referer carries; this
		// also keeps chat ids in the path of links out of other sites' logs.
		h.Set(fiber.HeaderReferrerPolicy, "no-referrer")
	}
	if inm := c.Get(fiber.HeaderIfNoneMatch); inm != "" && etagMatch(inm, f.etag) {
		return c.SendStatus(fiber.StatusNotModified)
	}
	c.Set(fiber.HeaderContentType, f.ctype)
	return c.Send(f.body)
}

// etagMatch reports whether an If-None-Match header names etag (or is *).
func etagMatch(header, etag string) bool {
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
		if t == "*" || t == etag {
			return true
		}
	}
	return false
}
