package chatd_test

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/chatd/chatd"

// allowedImports is the dependency direction of docs/architecture.md
// (section 4, "Packages and the direction of their dependencies"): for each
// package (by directory), the project packages its non-test code may import.
// A new import of ours that is not listed fails the test, so a layering break
// is a deliberate change to this table, not an accident.
var allowedImports = map[string][]string{
	// The vocabulary: imports nothing of ours (TestRootImportsNothingOfOurs).
	".":        {},
	"embedded": {},
	// The message's JSON and the envelope's size, shared by the wire and the stream.
	"pkg/codec":  {"", "internal/jsonfast"},
	"pkg/store":  {"", "pkg/codec", "internal/logsample"},
	"pkg/ingest": {"", "pkg/codec", "pkg/store", "internal/logsample"},
	// Commit batches sent to the node whose relay leads; the ingest through its own interface.
	"pkg/forward": {"", "pkg/codec", "pkg/store", "internal/logsample", "internal/jsonfast"},
	"pkg/push":    {"", "pkg/codec", "internal/logsample"},
	"pkg/reclaim": {},
	"pkg/stream":  {"", "pkg/codec", "pkg/store", "internal/logsample", "internal/jsonfast"},
	"pkg/wire":    {"", "pkg/codec", "internal/jsonfast"}, // the WebSocket protocol; any client may import it, so domain types and their JSON only
	"pkg/api":     {"", "pkg/wire", "pkg/push", "internal/logsample", "internal/idle"},
	"pkg/client":  {"", "pkg/wire", "internal/idle"},
	"pkg/node":    {"", "embedded", "pkg/api", "pkg/ingest", "pkg/forward", "pkg/push", "pkg/reclaim", "pkg/store", "pkg/stream", "pkg/signal", "pkg/webhook", "pkg/notify", "pkg/changes", "web"},
	// Webhook delivery from the stream; the store only through its own interface.
	"pkg/webhook": {"", "pkg/codec", "internal/logsample", "internal/elect", "internal/jsonfast", "internal/heldack"},
	// Offline notifications from the stream, published for the webhooks; the store through its own interface.
	"pkg/notify": {"", "pkg/codec", "internal/logsample", "internal/elect", "internal/heldack"},
	// Chat changes from PostgreSQL into their stream, for the webhooks; the store through its own interface.
	"pkg/changes": {"", "internal/logsample", "internal/elect"},
	// cmd/chatd binds flags into the components' configs, with their defaults.
	"cmd/chatd":    {"", "pkg/api", "pkg/ingest", "pkg/node", "pkg/push", "pkg/reclaim", "pkg/signal", "pkg/store", "pkg/stream", "pkg/webhook", "pkg/notify", "internal/gcfloor", "internal/timerslack", "internal/reexec", "internal/cpushare"},
	"cmd/chatload": {"", "pkg/api", "pkg/client", "pkg/node", "internal/rusage"},
	// Examples use what an application outside the repository could.
	"examples/bot": {"", "pkg/client"},
	// A webhook endpoint needs nothing of chatd's: it verifies with the standard library.
	"examples/webhook-receiver": {},

	// Signals across the cluster; the API uses it through its own interfaces.
	"pkg/signal": {"", "internal/logsample"},

	// Samples repeated log lines for any component; imports nothing of ours.
	"internal/logsample": {},
	// Reflection-free JSON for the hot paths; imports nothing of ours.
	"internal/jsonfast": {},
	// The lazy read-deadline rule both ends of a WebSocket keep; imports nothing of ours.
	"internal/idle": {},
	// This process's CPU time, for chatload's per-message figures; imports nothing of ours.
	"internal/rusage": {},
	// One node of many runs a task, by a lock; imports nothing of ours.
	"internal/elect": {},
	// Which held JetStream deliveries a keep-alive tells; imports nothing of ours.
	"internal/heldack": {},
	// A floor under the Go collector's heap goal; imports nothing of ours.
	"internal/gcfloor": {},
	// The process's timer slack; imports nothing of ours.
	"internal/timerslack": {},
	// chatd executed again at start, for what the runtime takes only then.
	"internal/reexec": {"internal/timerslack"},
	// How many chatd processes share this machine's CPUs; imports nothing of ours.
	"internal/cpushare": {},

	// The browser files (demo app, JavaScript SDK) embedded for pkg/api to serve.
	"web": {},

	// Real nodes for tests: below pkg/node, as httptest is below net/http.
	"pkg/node/nodetest": {"", "embedded", "pkg/node", "internal/testmetric"},
	"pkg/api/apitest":   {"pkg/api"},

	// Deployment artefacts; only its tests have code, and they may import anything.
	"deploy": {},
}

// The root package is the vocabulary every other package speaks, so it
// imports no package of this module at all (not even internal ones): a
// codec or helper it needs belongs in a package of its own.
func TestRootImportsNothingOfOurs(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		for _, imp := range importsOf(t, f) {
			if imp == module || strings.HasPrefix(imp, module+"/") {
				t.Errorf("%s imports %s: the root package imports nothing of ours", f, imp)
			}
		}
	}
}

func TestDependenciesPointOneWay(t *testing.T) {
	for dir, allowed := range allowedImports {
		ok := map[string]bool{}
		for _, a := range allowed {
			ok[strings.TrimSuffix(module+"/"+a, "/")] = true
		}
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			for _, imp := range importsOf(t, f) {
				if strings.HasPrefix(imp, module) && !ok[imp] {
					t.Errorf("%s imports %s: not allowed for %s (see allowedImports)", f, imp, dir)
				}
			}
		}
	}
}

// Every package directory of ours is in the table, so a new package has to
// declare where it sits.
func TestEveryPackageHasAnImportRule(t *testing.T) {
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		if strings.HasPrefix(d.Name(), ".") && path != "." || path == "internal" || strings.HasPrefix(path, "internal/") ||
			path == "e2e" || path == "tmpdeps" || strings.Contains(path, "testdata") {
			if path != "." {
				return filepath.SkipDir
			}
		}
		if prod := prodGoFiles(path); prod > 0 {
			if _, ok := allowedImports[path]; !ok {
				t.Errorf("package %s has no entry in allowedImports", path)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func prodGoFiles(dir string) int {
	files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
	n := 0
	for _, f := range files {
		if !strings.HasSuffix(f, "_test.go") {
			n++
		}
	}
	return n
}

func importsOf(t *testing.T, file string) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.ImportsOnly)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		out = append(out, p)
	}
	return out
}
