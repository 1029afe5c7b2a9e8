package embedded_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chatd/chatd/embedded"
)

// A cluster opens only with its own major version's server. After a
// distribution upgrade installs a newer PostgreSQL beside the one that made
// chatd's cluster, the start must say which version the cluster needs and
// what to install, not pass on the server's "incompatible" refusal (or,
// with both installed, fail at all: TestBinDirForClusterPicksItsVersion).
func TestPostgresClusterOfAnotherVersionSaysWhatToInstall(t *testing.T) {
	dir := mustClusterDir(t)
	pg := mustStartPostgres(t, dir)
	if err := pg.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	// PostgreSQL 9.4 is in no Debian release chatd runs on.
	if err := os.WriteFile(filepath.Join(dir, "PG_VERSION"), []byte("9.4\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := embedded.StartPostgres(ctx, embedded.PostgresConfig{Dir: dir})
	if err == nil {
		t.Fatal("a cluster of PostgreSQL 9.4 started with another version's server")
	}
	for _, want := range []string{"PostgreSQL 9.4", "apt-get install -y postgresql-9.4", "pg_upgrade"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}

// fakeServer makes dir/bin with an initdb and a postgres that print
// version when asked, as a PostgreSQL install of that version would.
func fakeServer(t *testing.T, dir, version string) string {
	t.Helper()
	bin := filepath.Join(dir, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"initdb", "postgres"} {
		script := "#!/bin/sh\necho '" + name + " (PostgreSQL) " + version + " (Debian " + version + "-1)'\n"
		if err := os.WriteFile(filepath.Join(bin, name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return bin
}

func TestBinDirForClusterPicksItsVersion(t *testing.T) {
	root := t.TempDir()
	v15 := fakeServer(t, filepath.Join(root, "15"), "15.18")
	v17 := fakeServer(t, filepath.Join(root, "17"), "17.6")
	v96 := fakeServer(t, filepath.Join(root, "9.6"), "9.6.24")
	candidates := []string{v17, v15, v96}
	for _, c := range []struct{ pgVersion, want string }{
		{"15\n", v15},
		{"17", v17},
		{"9.6\n", v96},
	} {
		got, err := embedded.BinDirFor(c.pgVersion, candidates)
		if err != nil || got != c.want {
			t.Errorf("PG_VERSION %q: got %q, %v; want %s", c.pgVersion, got, err, c.want)
		}
	}
	_, err := embedded.BinDirFor("16", candidates)
	if err == nil || !strings.Contains(err.Error(), "postgresql-16") || !strings.Contains(err.Error(), "17.6") {
		t.Errorf("PG_VERSION 16 with 9.6, 15 and 17 installed: %v; want what to install, and what is installed", err)
	}
}
