package embedded_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chatd/chatd/embedded"
)

// keptOutside is, for a test run as root, a data dir in a directory the
// postgres user cannot enter, so its cluster is kept elsewhere: start
// starts a cluster dir with the test's reachable root, hidden is that
// directory and requested the data dir's cluster dir (<hidden>/data/pg).
func keptOutside(t *testing.T) (start func(dir string) (*embedded.Postgres, error), hidden, requested string) {
	t.Helper()
	hidden, root := mustHiddenDir(t)
	requested = filepath.Join(hidden, "data", "pg")
	if err := os.MkdirAll(filepath.Dir(requested), 0o700); err != nil {
		t.Fatal(err)
	}
	start = func(dir string) (*embedded.Postgres, error) {
		return embedded.StartPostgres(context.Background(), embedded.PostgresConfig{Dir: dir, ReachableRoot: root})
	}
	return start, hidden, requested
}

// A cluster kept outside the data dir (root, a data dir the postgres user
// cannot reach) is found again after the data dir is moved or renamed: the
// data dir says where its cluster is. Before, the place was derived from
// the data dir's path alone, so a moved data dir started on a new, empty
// database with its old one left behind. If the cluster it names is gone,
// the start refuses instead of making an empty one.
func TestPostgresMovedDataDirFindsItsClusterElsewhere(t *testing.T) {
	start, hidden, before := keptOutside(t)
	pg, err := start(before)
	if err != nil {
		t.Fatal(err)
	}
	kept := pg.Dir()
	mustExec(t, pg.DSN("postgres"), "CREATE TABLE notes (body text); INSERT INTO notes VALUES ('kept')")
	if err := pg.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}

	after := filepath.Join(hidden, "moved", "pg")
	if err := os.Rename(filepath.Dir(before), filepath.Dir(after)); err != nil {
		t.Fatal(err)
	}
	pg, err = start(after)
	if err != nil {
		t.Fatalf("start on the moved data dir: %v", err)
	}
	if pg.Dir() != kept {
		t.Errorf("moved data dir: cluster %s, want the one it had, %s", pg.Dir(), kept)
	}
	if note := readNote(t, pg.DSN("postgres")); note != "kept" {
		t.Errorf("moved data dir: got %q, want the row written before the move", note)
	}
	if err := pg.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}

	if err := os.RemoveAll(kept); err != nil {
		t.Fatal(err)
	}
	_, err = start(after)
	if err == nil {
		t.Fatal("the data dir's cluster is gone, and the start made an empty one")
	}
	if !strings.Contains(err.Error(), kept) {
		t.Errorf("error %q does not name where the cluster was", err)
	}
}

// A data dir copied (cp -r) while its cluster is kept outside it would note
// the same cluster as the original: two servers on one database, each
// thinking it its own. The copy's start refuses and says why; the original
// keeps working, and once the original is gone the copy takes the cluster
// over as a moved data dir would.
func TestPostgresCopiedDataDirDoesNotShareTheCluster(t *testing.T) {
	start, hidden, orig := keptOutside(t)
	pg, err := start(orig)
	if err != nil {
		t.Fatal(err)
	}
	kept := pg.Dir()
	if err := pg.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	copied := filepath.Join(hidden, "copy", "pg")
	if err := os.CopyFS(filepath.Dir(copied), os.DirFS(filepath.Dir(orig))); err != nil {
		t.Fatal(err)
	}

	if pg, err := start(copied); err == nil {
		_ = pg.Stop(context.Background())
		t.Fatal("a copied data dir started on its original's cluster")
	}
	_, err = start(copied)
	for _, want := range []string{filepath.Dir(orig), kept} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
	if pg, err = start(orig); err != nil {
		t.Fatalf("the original after the copy's refusal: %v", err)
	}
	if err := pg.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}

	if err := os.RemoveAll(filepath.Dir(orig)); err != nil {
		t.Fatal(err)
	}
	pg, err = start(copied)
	if err != nil {
		t.Fatalf("the copy, once the original is gone: %v", err)
	}
	t.Cleanup(func() { _ = pg.Stop(context.Background()) })
	if pg.Dir() != kept {
		t.Errorf("the copy took %s, want the original's %s", pg.Dir(), kept)
	}
}
