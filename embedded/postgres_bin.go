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
	for _, dir := range binDirCandidates() {
		if checkBinDir(dir) == nil {
			return dir, nil
		}
	}
	return "", fmt.Errorf("no PostgreSQL server binaries found (looked at `pg_config --bindir` and %s): %s", debianBinGlob, installHint)
}

// binDirCandidates lists the directories that may hold a PostgreSQL server:
// `pg_config --bindir`, then Debian's /usr/lib/postgresql/*/bin, newest
// first.
func binDirCandidates() []string {
	var dirs []string
	if dir, err := pgConfigBinDir(); err == nil {
		dirs = append(dirs, dir)
	}
	glob, _ := filepath.Glob(debianBinGlob)
	sort.Slice(glob, func(i, j int) bool { return majorVersion(glob[i]) > majorVersion(glob[j]) })
	return append(dirs, glob...)
}

// binDirForCluster returns the server binaries of the major version that
// made the cluster in dataDir: a server opens only its own major version's
// clusters, and after a distribution upgrade installs a newer PostgreSQL
// beside the old one, the newest is the wrong one.
func binDirForCluster(dataDir string) (string, error) {
	v, err := os.ReadFile(filepath.Join(dataDir, "PG_VERSION"))
	if err != nil {
		return "", fmt.Errorf("postgres cluster %s: %w", dataDir, err)
	}
	dir, err := binDirFor(string(v), binDirCandidates())
	if err != nil {
		return "", fmt.Errorf("postgres cluster %s: %w", dataDir, err)
	}
	return dir, nil
}

// binDirFor returns the first of candidates whose server is of the major
// version pgVersion names (a cluster's PG_VERSION: "15", or "9.6" before
// PostgreSQL 10). Without one it says what to install, and what is there.
func binDirFor(pgVersion string, candidates []string) (string, error) {
	want := strings.TrimSpace(pgVersion)
	var found []string
	for _, dir := range candidates {
		if checkBinDir(dir) != nil {
			continue
		}
		full, err := serverVersion(dir)
		if err != nil {
			continue
		}
		if majorOf(full) == want {
			return dir, nil
		}
		found = append(found, full+" in "+dir)
	}
	there := "no other version either"
	if len(found) > 0 {
		there = "found " + strings.Join(found, ", ")
	}
	return "", fmt.Errorf("it was made by PostgreSQL %s, whose server is not installed (%s): "+
		"install it (apt-get install -y postgresql-%s), or upgrade the cluster to an installed version with pg_upgrade while chatd is stopped",
		want, there, want)
}

// serverVersion is the version `postgres --version` in dir prints: "15.18"
// of "postgres (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)".
func serverVersion(dir string) (string, error) {
	out, err := exec.Command(filepath.Join(dir, "postgres"), "--version").Output()
	if err != nil {
		return "", err
	}
	_, rest, ok := strings.Cut(string(out), "(PostgreSQL) ")
	fields := strings.Fields(rest)
	if !ok || len(fields) == 0 {
		return "", fmt.Errorf("%s/postgres --version: %q", dir, out)
	}
	return fields[0], nil
}

// majorOf is a full version's major, as PG_VERSION writes it: "15" of
// "15.18", "9.6" of "9.6.24".
func majorOf(version string) string {
	parts := strings.Split(version, ".")
	if n, err := strconv.Atoi(parts[0]); err == nil && n < 10 && len(parts) > 1 {
		return parts[0] + "." + parts[1]
	}
	return parts[0]
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
