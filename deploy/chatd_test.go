package deploy_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/chatd/chatd/internal/testpg"
)

func TestMain(m *testing.M) { testpg.Main(m) }

// root is the repository root: the tests run in deploy/.
const root = ".."

// chatdCLI is what a chatd binary accepts: its flags (without dashes) and the
// environment variables they fall back to, read from its --help.
type chatdCLI struct {
	flags map[string]bool
	env   map[string]bool
}

// hasFlag reports whether arg ("--x", "-x", "--x=v") names a flag chatd has.
func (c *chatdCLI) hasFlag(arg string) bool {
	name := strings.TrimLeft(arg, "-")
	name, _, _ = strings.Cut(name, "=")
	return c.flags[name]
}

// builtChatd is chatd's CLI as `make build` builds it, read once for the
// tests of this binary (the binary is removed once read). The Dockerfile
// builds the same package with other build flags (checked by
// TestDockerfileBuildLine), which change no flag; building it this way
// shares the build cache with make build, where a -trimpath build would
// compile every dependency again.
var builtChatd = sync.OnceValues(func() (*chatdCLI, error) {
	dir, err := os.MkdirTemp("", "chatd-deploy-test-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "chatd")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/chatd")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, &helpError{err: err, out: string(out)}
	}
	return readCLI(bin)
})

// mustChatd returns the chatd the image would ship, failing t if it cannot
// be built the Dockerfile's way.
func mustChatd(t *testing.T) *chatdCLI {
	t.Helper()
	c, err := builtChatd()
	if err != nil {
		t.Fatalf("build chatd: %v", err)
	}
	return c
}

var (
	// A --help line: "  --name  CHATD_NAME  default  what it does" (the
	// env column is "-" for a flag without one).
	helpFlag = regexp.MustCompile(`(?m)^\s+--([a-z0-9][a-z0-9-]*)\s`)
	helpEnv  = regexp.MustCompile(`(?m)^\s+--[a-z0-9][a-z0-9-]*\s+(CHATD_[A-Z0-9_]+)\s`)
)

// readCLI runs bin --help and collects its flags and env names.
func readCLI(bin string) (*chatdCLI, error) {
	out, err := exec.Command(bin, "--help").CombinedOutput()
	if err != nil {
		return nil, &helpError{err: err, out: string(out)}
	}
	c := &chatdCLI{flags: map[string]bool{}, env: map[string]bool{}}
	for _, m := range helpFlag.FindAllStringSubmatch(string(out), -1) {
		c.flags[m[1]] = true
	}
	for _, m := range helpEnv.FindAllStringSubmatch(string(out), -1) {
		c.env[m[1]] = true
	}
	if len(c.flags) < 10 || len(c.env) < 10 {
		return nil, &helpError{out: string(out)}
	}
	return c, nil
}

type helpError struct {
	err error
	out string
}

func (e *helpError) Error() string {
	if e.err == nil {
		return "chatd --help lists too few flags or env names:\n" + e.out
	}
	return "chatd --help: " + e.err.Error() + "\n" + e.out
}

// checkArgs fails t for every flag in args that chatd does not have. A flag
// is an argument starting with "-" in flag position (not a flag's value).
func checkArgs(t *testing.T, c *chatdCLI, where string, args []string) {
	t.Helper()
	for _, a := range args {
		if strings.HasPrefix(a, "-") && !c.hasFlag(a) {
			t.Errorf("%s: chatd has no flag %s (chatd --help)", where, a)
		}
	}
}

var chatdEnvName = regexp.MustCompile(`\bCHATD_[A-Z0-9_]+\b`)

// checkEnvNames fails t for every CHATD_* name in text that chatd does not
// read.
func checkEnvNames(t *testing.T, c *chatdCLI, where, text string) {
	t.Helper()
	names := chatdEnvName.FindAllString(text, -1)
	slices.Sort(names)
	for _, n := range slices.Compact(names) {
		if !c.env[n] {
			t.Errorf("%s: chatd reads no %s (chatd --help)", where, n)
		}
	}
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
