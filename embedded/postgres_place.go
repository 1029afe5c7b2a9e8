package embedded

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// defaultReachableRoot is where a cluster goes when the postgres user
// cannot reach the data dir (PostgresConfig.ReachableRoot).
const defaultReachableRoot = "/var/lib/chatd"

// placement is where the cluster lives, and why when it is not where the
// caller asked.
type placement struct {
	dir   string // the cluster dir
	moved bool   // dir is under the reachable root, not the requested one
	why   error  // with moved: why the requested dir would not do
}

// placeCluster picks the cluster dir for a requested one. When chatd runs
// as root the server runs as the postgres user, which must traverse every
// directory above its cluster. A clone in a 0700 home (root's own, say)
// fails that, and opening up the user's home would expose it, so the
// cluster lives under root instead, at a path derived from the requested
// one: the next start finds it there again.
//
// Order: a cluster already in the requested dir stays there (never moved
// behind the user's back; an unreachable one is an error that says how to
// fix it); then the one the data dir notes (locationFile), so a data dir
// moved or renamed keeps its cluster; then one already under root; then
// the requested dir if the server can reach it; else a new one under root.
// A cluster kept under root is noted in the data dir.
func placeCluster(requested, root string, as runAs) (placement, error) {
	if as.cred == nil || hasCluster(requested) {
		return placement{dir: requested}, reachable(requested, as)
	}
	if root == "" {
		root = defaultReachableRoot
	}
	alt := reachableClusterDir(root, requested)
	why := as.checkTraversable(requested)
	noted, err := readLocation(requested)
	if err != nil {
		return placement{}, err
	}
	switch {
	case noted != "" && hasCluster(noted):
		return placement{dir: noted, moved: true, why: why}, claim(requested, noted)
	case noted != "" && noted != alt:
		// Not a first start that failed before initdb (that one is noted at
		// alt): the database this data dir had is gone.
		return placement{}, fmt.Errorf("%s says this data dir's PostgreSQL cluster is in %s, and there is none there: put it back, or delete %s to start on a new, empty database",
			locationFile(requested), noted, locationFile(requested))
	}
	if hasCluster(alt) {
		return placement{dir: alt, moved: true, why: why}, claim(requested, alt)
	}
	if why == nil {
		return placement{dir: requested}, reachable(requested, as)
	}
	if err := mkdirReachable(filepath.Dir(alt)); err != nil {
		return placement{}, fmt.Errorf("%w; and keeping the cluster in %s instead failed: %v", why, alt, err)
	}
	if err := as.checkTraversable(alt); err != nil {
		return placement{}, fmt.Errorf("%w; and %s is no better: %v", why, alt, err)
	}
	return placement{dir: alt, moved: true, why: why}, claim(requested, alt)
}

// ownerFile is where a cluster kept under root names the data dir it
// belongs to: <cluster>/../data-dir, beside the cluster, root's to write.
func ownerFile(cluster string) string { return filepath.Join(filepath.Dir(cluster), "data-dir") }

// claim makes the cluster the requested data dir's: noted in the data dir
// (locationFile) and naming it as its owner (ownerFile). A cluster another
// data dir still notes is refused: that data dir is a copy's original
// (cp -r), and two data dirs on one database would each take it for their
// own. One whose owner is gone (or never said) was moved, and is taken.
func claim(requested, cluster string) error {
	dataDir := filepath.Dir(requested)
	b, err := os.ReadFile(ownerFile(cluster))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("postgres cluster owner: %w", err)
	}
	if owner := strings.TrimSpace(string(b)); owner != dataDir {
		if owner != "" && stillNotes(filepath.Join(owner, filepath.Base(requested)), cluster) {
			return fmt.Errorf("the PostgreSQL cluster %s belongs to the data dir %s, which still uses it: %s looks like a copy of it. "+
				"Give the copy a database of its own (delete %s to start it on a new, empty one), or use the original",
				cluster, owner, dataDir, locationFile(requested))
		}
		if err := os.WriteFile(ownerFile(cluster), []byte(dataDir+"\n"), 0o644); err != nil {
			return fmt.Errorf("postgres cluster owner: %w", err)
		}
	}
	return noteLocation(requested, cluster)
}

// stillNotes reports whether the data dir of requested notes cluster.
func stillNotes(requested, cluster string) bool {
	noted, err := readLocation(requested)
	return err == nil && noted == cluster
}

// locationFile is where a data dir notes the cluster kept outside it:
// <data-dir>/pg.location, the cluster dir's path on one line.
func locationFile(requested string) string { return requested + ".location" }

// readLocation returns the cluster dir the data dir notes, or "".
func readLocation(requested string) (string, error) {
	b, err := os.ReadFile(locationFile(requested))
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("postgres cluster location: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}

// noteLocation writes dir into the data dir's locationFile, unless it says
// so already.
func noteLocation(requested, dir string) error {
	if stillNotes(requested, dir) {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(requested), 0o700); err != nil {
		return fmt.Errorf("postgres cluster location: %w", err)
	}
	if err := os.WriteFile(locationFile(requested), []byte(dir+"\n"), 0o644); err != nil {
		return fmt.Errorf("postgres cluster location: %w", err)
	}
	return nil
}

// reachable creates dir's parents (0755, so the server user can pass) and
// fails unless the server user can reach dir. It checks before creating
// anything, and again after, in case a strict umask narrowed the parents.
func reachable(dir string, as runAs) error {
	if err := as.checkTraversable(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return fmt.Errorf("cluster dir: %w", err)
	}
	return as.checkTraversable(dir)
}

func hasCluster(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, "PG_VERSION"))
	return err == nil
}

var unsafeNameChars = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// reachableClusterDir is root/<name>/pg for a requested cluster dir, <name>
// being the data dir's base name (for the operator) and a hash of its
// resolved absolute path (so two data dirs never share a cluster).
func reachableClusterDir(root, requested string) string {
	parent := filepath.Dir(requested)
	if resolved, err := filepath.EvalSymlinks(parent); err == nil {
		parent = resolved
	}
	sum := sha256.Sum256([]byte(filepath.Join(parent, filepath.Base(requested))))
	base := unsafeNameChars.ReplaceAllString(filepath.Base(parent), "_")
	if len(base) > 32 {
		base = base[:32]
	}
	return filepath.Join(root, base+"-"+hex.EncodeToString(sum[:6]), "pg")
}

// mkdirReachable creates dir and its missing parents mode 0755 regardless
// of the umask: they hold nothing secret (the cluster inside is 0700) and
// the server user must pass through them.
func mkdirReachable(dir string) error {
	if _, err := os.Stat(dir); err == nil {
		return nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err := mkdirReachable(filepath.Dir(dir)); err != nil {
		return err
	}
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return os.Chmod(dir, 0o755)
}
