package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/chatd/chatd/pkg/api"
	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"
)

// openapi3Doc loads and validates the document chatd serves, once per
// test binary; the router below matches its paths on any host (the tests'
// servers listen on random ports).
var openapi3Doc = sync.OnceValues(func() (*openapi3.T, error) {
	doc, err := openapi3.NewLoader().LoadFromData(api.OpenAPI())
	if err != nil {
		return nil, fmt.Errorf("load openapi.yaml: %w", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, fmt.Errorf("openapi.yaml is not a valid OpenAPI document: %w", err)
	}
	doc.Servers = nil
	return doc, nil
})

var openAPIRouter = sync.OnceValues(func() (routers.Router, error) {
	doc, err := openapi3Doc()
	if err != nil {
		return nil, err
	}
	return legacy.NewRouter(doc)
})

// bearerPresent is the document's security check: a request without a
// bearer token is one the document calls invalid (the server must refuse it).
func bearerPresent(_ context.Context, in *openapi3filter.AuthenticationInput) error {
	if !strings.HasPrefix(in.RequestValidationInput.Request.Header.Get("Authorization"), "Bearer ") {
		return fmt.Errorf("no bearer token")
	}
	return nil
}

// checkOpenAPI checks one exchange against the OpenAPI document:
//   - the answer must be one the document describes for that call: its
//     status listed, its headers and body matching (an undocumented status,
//     field or code fails);
//   - a body where the document describes none fails;
//   - a request the document calls invalid (body, parameters or token) must
//     have been refused with a 4xx: the document may not be stricter than
//     the server;
//   - a path the document lacks may only be answered 404 (or 401 under
//     /api without a token) with the error body.
func checkOpenAPI(t testing.TB, req *http.Request, reqBody []byte, resp *http.Response, respBody []byte) {
	t.Helper()
	router, err := openAPIRouter()
	if err != nil {
		t.Fatal(err)
	}
	if req.Method == http.MethodOptions && req.Header.Get("Access-Control-Request-Method") != "" {
		return // a CORS preflight: the browser's question, answered before any call (cors.go)
	}
	what := req.Method + " " + req.URL.RequestURI()
	vreq := req.Clone(context.Background())
	vreq.Body = io.NopCloser(bytes.NewReader(reqBody))
	route, params, err := router.FindRoute(vreq)
	if err != nil {
		if !strings.HasPrefix(req.URL.Path, "/api/") && resp.StatusCode < 400 {
			return // a file of the demo or the SDK: the document describes calls, not files
		}
		if resp.StatusCode != http.StatusNotFound && resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("openapi: %s is not in the document, yet answered %d", what, resp.StatusCode)
			return
		}
		checkErrorBody(t, what, resp, respBody)
		return
	}
	opts := &openapi3filter.Options{AuthenticationFunc: bearerPresent, IncludeResponseStatus: true, MultiError: true}
	in := &openapi3filter.RequestValidationInput{Request: vreq, PathParams: params, Route: route, Options: opts}
	if err := openapi3filter.ValidateRequest(context.Background(), in); err != nil && resp.StatusCode < 400 {
		t.Errorf("openapi: %s: the document calls the request invalid (%v), yet the server answered %d", what, err, resp.StatusCode)
	}
	out := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: in, Status: resp.StatusCode, Header: resp.Header,
		Body: io.NopCloser(bytes.NewReader(respBody)), Options: opts,
	}
	if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil {
		t.Errorf("openapi: %s answered %d %s: not as documented: %v", what, resp.StatusCode, clip(respBody), err)
		return
	}
	r := route.Operation.Responses.Status(resp.StatusCode)
	if r == nil {
		return // answered by a default response, which ValidateResponse checked
	}
	if len(r.Value.Content) == 0 && len(respBody) > 0 {
		t.Errorf("openapi: %s answered %d with a body %s where the document describes none", what, resp.StatusCode, clip(respBody))
	}
	for _, h := range contractHeaders {
		if resp.Header.Get(h) != "" && r.Value.Headers[h] == nil {
			t.Errorf("openapi: %s answered %d with %s, which the document does not declare there", what, resp.StatusCode, h)
		}
	}
	checkAsText(t, what, resp, respBody, r.Value)
}

// contractHeaders are the response headers a client acts on: where chatd
// sends one, the document must say so, for ValidateResponse only checks
// the headers the document declares.
var contractHeaders = []string{"Retry-After", "WWW-Authenticate"}

// checkAsText checks a body that is not JSON the way Prism does: as a
// string against the declared schema. kin-openapi parses some such types
// (YAML) first, so a schema only it accepts would pass here and fail a
// client's validating proxy.
func checkAsText(t testing.TB, what string, resp *http.Response, body []byte, r *openapi3.Response) {
	t.Helper()
	ct := resp.Header.Get("Content-Type")
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil || mt == "application/json" {
		return
	}
	m := r.Content.Get(ct)
	if m == nil || m.Schema == nil {
		return
	}
	if err := m.Schema.Value.VisitJSON(string(body), openapi3.EnableJSONSchema2020()); err != nil {
		msg, _, _ := strings.Cut(err.Error(), "\n")
		t.Errorf("openapi: %s answered %d %s: read as text, as Prism reads it, not as documented: %s", what, resp.StatusCode, mt, msg)
	}
}

// checkErrorBody checks an answer to a path the document lacks: the
// JSON error shape with a code of the document's list.
func checkErrorBody(t testing.TB, what string, resp *http.Response, body []byte) {
	t.Helper()
	schema := errorSchema(t)
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		t.Errorf("openapi: %s answered %d %s: not a JSON error: %v", what, resp.StatusCode, clip(body), err)
		return
	}
	if err := schema.VisitJSON(v, openapi3.EnableJSONSchema2020()); err != nil {
		t.Errorf("openapi: %s answered %d %s: not the error shape: %v", what, resp.StatusCode, clip(body), err)
	}
}

// errorSchema is the document's Error schema.
var errorSchemaOnce = sync.OnceValues(func() (*openapi3.Schema, error) {
	doc, err := openapi3Doc()
	if err != nil {
		return nil, err
	}
	s := doc.Components.Schemas["Error"]
	if s == nil {
		return nil, fmt.Errorf("openapi.yaml has no Error schema")
	}
	return s.Value, nil
})

func errorSchema(t testing.TB) *openapi3.Schema {
	t.Helper()
	s, err := errorSchemaOnce()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func clip(b []byte) string {
	if len(b) > 300 {
		return string(b[:300]) + "…"
	}
	return string(b)
}

// checkUpgrade checks the HTTP answer of a WebSocket dial of url with
// header h against the document: a refused upgrade is a plain HTTP answer
// (401, 403, 426, 503) and must be documented like any other; a successful
// one is 101 without a body.
func checkUpgrade(t testing.TB, url string, h http.Header, resp *http.Response) {
	t.Helper()
	if resp == nil {
		return
	}
	req, err := http.NewRequest("GET", "http"+strings.TrimPrefix(url, "ws"), nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range h {
		req.Header[k] = v
	}
	var body []byte
	if resp.Body != nil {
		body, _ = io.ReadAll(resp.Body)
	}
	checkOpenAPI(t, req, nil, resp, body)
}

// checkedClient is an HTTP client whose every exchange is checked against
// the document like env.do's, for tests that make plain requests.
func checkedClient(t testing.TB) *http.Client {
	return &http.Client{Transport: checkingTransport{t: t}}
}

// checkingTransport runs each exchange through checkOpenAPI and reports
// on t; Errorf is safe from the goroutines some tests call it in.
type checkingTransport struct{ t testing.TB }

func (c checkingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	var reqBody []byte
	if req.Body != nil {
		var err error
		reqBody, err = io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		req = req.Clone(req.Context())
		req.Body = io.NopCloser(bytes.NewReader(reqBody))
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	raw, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(raw))
	checkOpenAPI(c.t, req, reqBody, resp, raw)
	return resp, nil
}
