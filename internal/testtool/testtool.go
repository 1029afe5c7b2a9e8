// Package testtool finds the outside tools scripts/ensure-deploy-tools.sh
// builds into GOBIN (helm, promtool, caddy), for tests that run them.
package testtool

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Path is the named tool in GOBIN (GOPATH/bin when GOBIN is unset). make
// check-deploy, which make test runs before the Go tests, builds it.
// Without it the test fails and says how to get it, rather than skipping.
func Path(t testing.TB, name string) string {
	t.Helper()
	dir, err := exec.Command("go", "env", "GOBIN").Output()
	if err != nil {
		t.Fatal(err)
	}
	bin := strings.TrimSpace(string(dir))
	if bin == "" {
		gopath, err := exec.Command("go", "env", "GOPATH").Output()
		if err != nil {
			t.Fatal(err)
		}
		bin = filepath.Join(strings.TrimSpace(string(gopath)), "bin")
	}
	p := filepath.Join(bin, name)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%s not found at %s: run scripts/ensure-deploy-tools.sh (make check-deploy does)", name, p)
	}
	return p
}
