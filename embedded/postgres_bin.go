package embedded

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// installHint is appended to every "no PostgreSQL" error: the one action
// that fixes it on the Debian machines chatd targets.
const installHint = "install the Debian package `postgresql` (apt-get install -y postgresql)"

// debianBinGlob is where Debian and Ubuntu put each major version's server
// binaries; they are not on PATH.
const debianBinGlob = "/usr/lib/postgresql/*/bin"

// FindBinDir returns the directory holding the PostgreSQL server binaries
// (initdb and postgres): `pg_config --bindir` if that directory has them,
// else the newest /usr/lib/postgresql/*/bin. pg_config alone is not enough:
// on Debian it comes with libpq-dev and may exist without a server.
func FindBinDir() (string, error) {
	if dir, err := pgConfigBinDir(); err == nil && checkBinDir(dir) == nil {
		return dir, nil
	}
	dirs, _ := filepath.Glob(debianBinGlob)
	sort.Slice(dirs, func(i, j int) bool { return majorVersion(dirs[i]) > majorVersion(dirs[j]) })
	for _, dir := range dirs {
		if checkBinDir(dir) == nil {
			return dir, nil
		}
	}
	return "", fmt.Errorf("no PostgreSQL server binaries found (looked at `pg_config --bindir` and %s): %s", debianBinGlob, installHint)
}

func pgConfigBinDir() (string, error) {
	path, err := exec.LookPath("pg_config")
	if err != nil {
		return "", err
	}
	out, err := exec.Command(path, "--bindir").Output()
	if err != nil {
		return "", err
	}
	dir := strings.TrimSpace(string(out))
	if dir == "" {
		return "", errors.New("pg_config --bindir printed nothing")
	}
	return dir, nil
}

// majorVersion reads the version out of /usr/lib/postgresql/<v>/bin so that
// 16 sorts above 9.6; unparsable names sort last.
func majorVersion(binDir string) float64 {
	v, err := strconv.ParseFloat(filepath.Base(filepath.Dir(binDir)), 64)
	if err != nil {
		return -1
	}
	return v
}

// checkBinDir reports whether dir holds executable initdb and postgres.
func checkBinDir(dir string) error {
	for _, name := range []string{"initdb", "postgres"} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			return fmt.Errorf("postgres binaries: %s has no %s: %s", dir, name, installHint)
		}
		if fi.IsDir() || fi.Mode().Perm()&0o111 == 0 {
			return fmt.Errorf("postgres binaries: %s is not executable", filepath.Join(dir, name))
		}
	}
	return nil
}
