package chatd_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// maxTrackedBytes is the largest file the repository may track: anything
// bigger is a build output or a data dump, which belongs in .gitignore.
const maxTrackedBytes = 1 << 20

func TestNoLargeTrackedFiles(t *testing.T) {
	out, err := exec.Command("git", "ls-files", "-z").Output()
	if err != nil {
		t.Skipf("not a git checkout (%v): nothing to check", err)
	}
	for _, name := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		info, err := os.Stat(name)
		if err != nil {
			continue // deleted in the work tree, not yet committed
		}
		if info.Size() > maxTrackedBytes {
			t.Errorf("%s is tracked and %d bytes (over %d): remove it with `git rm --cached %s` and add it to .gitignore",
				name, info.Size(), maxTrackedBytes, name)
		}
	}
}
