package api_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/pkg/api"
	"github.com/chatd/chatd/pkg/api/apitest"
)

// docCall is one operation of the OpenAPI document as a concrete request.
type docCall struct {
	method, path string
	body         bool // the operation takes a request body
	api          bool // behind the /api token and rate limit
}

var pathParam = regexp.MustCompile(`\{[^}]+\}`)

// documentCalls lists every operation of the document, path parameters
// filled in with a valid id.
func documentCalls(t *testing.T) []docCall {
	t.Helper()
	doc, err := openapi3Doc()
	if err != nil {
		t.Fatal(err)
	}
	var calls []docCall
	for _, path := range doc.Paths.InMatchingOrder() {
		for method, op := range doc.Paths.Value(path).Operations() {
			calls = append(calls, docCall{
				method: method,
				path:   pathParam.ReplaceAllString(path, "x1"),
				body:   op.RequestBody != nil,
				api:    op.Security == nil && strings.HasPrefix(path, "/api/"),
			})
		}
	}
	return calls
}

// send makes one request through the checking client: the answer must be
// one the document describes. A refusal the server sends before reading
// the whole request can race our write of it into a reset; such a try is
// made again, after a pause that grows, so that a busy moment of the
// machine (the race detector on two cores) does not decide every try.
func (e *env) send(t *testing.T, method, path, tok, ctype string, body []byte, header http.Header) (*http.Response, []byte) {
	t.Helper()
	var lastErr error
	for try := range 10 {
		if try > 0 {
			time.Sleep(time.Duration(try) * 20 * time.Millisecond)
		}
		req, err := http.NewRequest(method, e.base+path, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range header {
			req.Header[k] = v
		}
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		if ctype != "" {
			req.Header.Set("Content-Type", ctype)
		}
		resp, err := checkedClient(t).Do(req)
		if err != nil {
			lastErr = err
			continue
		}
		raw, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		return resp, raw
	}
	t.Fatalf("%s %s: no answer in 10 tries; the last: %v", method, path, lastErr)
	return nil, nil
}

// Every call answers the limits chatd applies before any route (a body
// over the HTTP body limit, a header over MaxHeaderBytes) as the document
// says, whatever its method: the checking client fails the test on an
// undocumented status.
func TestEveryCallAnswersTransportLimitsAsDocumented(t *testing.T) {
	t.Parallel()
	e := mustEnv(t)
	tok := apitest.Token(t, testSecret, "alice", "")
	big := http.Header{"X-Big": {strings.Repeat("a", 8<<10)}}
	body := []byte(`{"x":"` + strings.Repeat("a", 70<<10) + `"}`)
	for _, c := range documentCalls(t) {
		t.Run(c.method+" "+c.path, func(t *testing.T) {
			if resp, _ := e.send(t, c.method, c.path, tok, "", nil, big); resp.StatusCode != 431 {
				t.Errorf("header over the limit: got status %d, want 431", resp.StatusCode)
			}
			if resp, _ := e.send(t, c.method, c.path, tok, "application/json", body, nil); resp.StatusCode != 413 {
				t.Errorf("body over the limit: got status %d, want 413", resp.StatusCode)
			}
		})
	}
}

// Every /api call, and the development login, answers over the caller's
// rate 429 with Retry-After, as documented.
func TestEveryAPICallAnswers429AsDocumented(t *testing.T) {
	t.Parallel()
	e := mustEnv(t, func(c *api.Config) { c.REST.RatePerSecond, c.REST.Burst, c.DevLogin = 1, 1, true })
	for i, c := range documentCalls(t) {
		if !c.api && c.path != "/api/dev/login" {
			continue
		}
		t.Run(c.method+" "+c.path, func(t *testing.T) {
			user := fmt.Sprintf("rate%d", i)
			tok, body := apitest.Token(t, testSecret, user, ""), []byte(nil)
			if c.path == "/api/dev/login" {
				tok, body = "", []byte(`{"user":"`+user+`"}`)
			}
			e.send(t, c.method, c.path, tok, "application/json", body, nil) // takes the one token
			resp, _ := e.send(t, c.method, c.path, tok, "application/json", body, nil)
			if resp.StatusCode != 429 || resp.Header.Get("Retry-After") == "" {
				t.Errorf("over the rate: got status %d Retry-After %q, want 429 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"))
			}
		})
	}
}

// failingPresence answers every lookup with err.
type failingPresence struct {
	api.Presence
	err error
}

func (p failingPresence) Lookup(context.Context, string, []string) ([]chatd.Presence, error) {
	return nil, p.err
}

// GET /api/presence answers a failed lookup 503 (with Retry-After) or 500,
// as documented.
func TestPresenceFailuresAsDocumented(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		err  error
		want int
	}{
		{"store unavailable", chatd.ErrUnavailable, 503},
		{"unexpected", errors.New("boom"), 500},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := mustEnv(t, func(c *api.Config) { c.Presence = failingPresence{err: tt.err} })
			resp, _ := e.send(t, "GET", "/api/presence?users=bob", apitest.Token(t, testSecret, "alice", ""), "", nil, nil)
			if resp.StatusCode != tt.want {
				t.Errorf("got status %d, want %d", resp.StatusCode, tt.want)
			}
		})
	}
}
