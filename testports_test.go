package chatd_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// testFixedPorts are the ways a test could listen on a fixed port: a node
// started outside the harness (node.Config's zero Listen is chatd's default
// 127.0.0.1:8080, the one `make run` holds), and listen addresses written
// with a port other than 0, in Go and in the web suites' JavaScript.
var testFixedPorts = []struct {
	re   *regexp.Regexp
	why  string
	only func(path string) bool
}{
	{regexp.MustCompile(`\bnode\.(Start|New)\(|(^|[^.\w])Start\(ctx|(^|[^.\w])Start\(context\.`),
		"starts a node outside pkg/node/nodetest, whose Run and Start pick a free port", isGo},
	{regexp.MustCompile(`(Listen|Addr)\s*[:=]\s*"[^"]*:[1-9][0-9]*"`), "a listen address with a fixed port", isGo},
	{regexp.MustCompile(`\bnet\.Listen\("tcp[46]?", "[^"]*:[1-9][0-9]*"`), "listens on a fixed port", isGo},
	{regexp.MustCompile(`"--(listen|nats-listen|debug-listen)",\s*"[^"]*:[1-9][0-9]*"`), "passes a fixed port to chatd", isGo},
	{regexp.MustCompile(`\.listen\(\s*[1-9]`), "listens on a fixed port", isJS},
	{regexp.MustCompile(`'--(listen|nats-listen|debug-listen)',\s*'[^']*:[1-9][0-9]*'`), "passes a fixed port to chatd", isJS},
}

func isGo(p string) bool { return strings.HasSuffix(p, ".go") }
func isJS(p string) bool { return strings.HasSuffix(p, ".mjs") || strings.HasSuffix(p, ".js") }

// testSources are the tracked test files and test harnesses: Go tests,
// internal/test* helpers, and the web suites' tests and libraries.
func testSources(t *testing.T) []string {
	t.Helper()
	out, err := exec.Command("git", "ls-files", "-z", "*_test.go", "internal/test*", "web/sdk/test", "web/e2e/test", "web/e2e/lib").Output()
	if err != nil {
		t.Skipf("not a git checkout (%v): nothing to check", err)
	}
	var files []string
	for _, name := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		if name != "" && name != "testports_test.go" {
			files = append(files, name)
		}
	}
	if len(files) == 0 {
		t.Fatal("git ls-files found no test files: the check would pass on nothing")
	}
	return files
}

// No test listens on a fixed port, so `make test` passes while `make run`
// (or anything else) holds chatd's default address or any other port.
func TestTestsUseNoFixedPort(t *testing.T) {
	for _, name := range testSources(t) {
		if filepath.Dir(name) == "pkg/node/nodetest" {
			continue // the harness itself, which fills in 127.0.0.1:0
		}
		b, err := os.ReadFile(name)
		if err != nil {
			continue // deleted in the work tree, not yet committed
		}
		for i, line := range strings.Split(string(b), "\n") {
			if trimmed := strings.TrimSpace(line); strings.HasPrefix(trimmed, "//") || strings.HasPrefix(trimmed, "*") {
				continue
			}
			for _, p := range testFixedPorts {
				if p.only(name) && p.re.MatchString(line) {
					t.Errorf("%s:%d: %s: %s", name, i+1, p.why, strings.TrimSpace(line))
				}
			}
		}
	}
}
