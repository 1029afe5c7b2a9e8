package e2e_test

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chatd/chatd/internal/testlog"
	"github.com/chatd/chatd/internal/testwait"
)

// docsSnippets returns the shell blocks of file (a path from the repository
// root) that talk to the chatd `make run` starts: every line is a `TOKEN=`
// assignment from `chatd token`, a curl to localhost:8080, or a `CHAT=`
// assignment from one (an id a later curl uses).
func docsSnippets(t *testing.T, file string) []string {
	t.Helper()
	text, err := os.ReadFile(filepath.Join("..", file))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, block := range strings.Split(string(text), "```sh\n")[1:] {
		block, _, _ = strings.Cut(block, "```")
		ok := strings.Contains(block, "localhost:8080")
		for _, line := range strings.Split(strings.TrimSpace(block), "\n") {
			if !strings.HasPrefix(line, "TOKEN=$(") && !strings.HasPrefix(line, "CHAT=$(curl ") && !strings.HasPrefix(line, "curl ") {
				ok = false
			}
		}
		if ok {
			out = append(out, block)
		}
	}
	return out
}

// makeRunFlags returns the flags the Makefile's run target starts chatd
// with, its LISTEN and DATA_DIR put in.
func makeRunFlags(t *testing.T, listen, dataDir string) []string {
	t.Helper()
	mk, err := os.ReadFile("../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(mk), "\n") {
		if rest, ok := strings.CutPrefix(line, "\t./bin/chatd "); ok {
			return strings.Fields(strings.NewReplacer("$(LISTEN)", listen, "$(DATA_DIR)", dataDir).Replace(rest))
		}
	}
	t.Fatal("the Makefile's run target has no ./bin/chatd line")
	return nil
}

// The commands README.md and docs/operations.md, integrations.md and bots.md show against `make run`
// work as written: chatd started with make run's flags, each block run by
// bash with only the binary's path, the data dir and the port put in, and
// curl told to fail on an HTTP error.
func TestDocsCommandsAgainstMakeRun(t *testing.T) {
	bin := mustBuildChatd(t)
	dir, addr := mustDataDir(t), freeAddr(t)
	out := &testlog.Buffer{}
	cmd := exec.Command(bin, append(makeRunFlags(t, addr, dir), "--log-level", "warn")...)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	})
	testwait.For(t, 30*time.Second, "chatd ready", func() bool {
		resp, err := http.Get("http://" + addr + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	ran := 0
	for _, file := range []string{"README.md", "docs/operations.md", "docs/integrations.md", "docs/bots.md"} {
		for _, block := range docsSnippets(t, file) {
			script := strings.NewReplacer(
				"./bin/chatd ", bin+" ",
				"$(chatd ", "$("+bin+" ",
				"./data", dir,
				"localhost:8080", addr,
				"curl -s ", "curl -sSf ",
			).Replace(block)
			got, err := exec.Command("bash", "-euo", "pipefail", "-c", script).CombinedOutput()
			if err != nil {
				t.Errorf("%s:\n%s\nfailed: %v\n%s\nchatd's log:\n%s", file, block, err, got, out.String())
				continue
			}
			if !strings.HasPrefix(strings.TrimSpace(string(got)), "{") {
				t.Errorf("%s:\n%s\nanswered %q, want a JSON object", file, block, got)
			}
			ran++
		}
	}
	if ran < 6 {
		t.Fatalf("ran %d documented blocks, want README's quick start, operations.md's admin call, integrations.md's three service blocks and bots.md's token", ran)
	}
}
