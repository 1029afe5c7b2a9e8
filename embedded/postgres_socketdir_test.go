package embedded_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// plantedUID owns the directories an attacker plants when the tests run as
// root (nobody's uid on Debian); without root they are our own.
const plantedUID = 65534

// mustPlantDir creates dir as another local user would: world-writable and,
// when we are root, owned by plantedUID.
func mustPlantDir(t *testing.T, dir string) {
	t.Helper()
	if err := os.Mkdir(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		if err := os.Chown(dir, plantedUID, plantedUID); err != nil {
			t.Fatal(err)
		}
	}
}

// checkUntouched fails unless dir still has the mode and owner that
// mustPlantDir gave it.
func checkUntouched(t *testing.T, dir string) {
	t.Helper()
	fi, err := os.Lstat(dir)
	if err != nil {
		t.Fatalf("planted dir: %v", err)
	}
	if got := fi.Mode().Perm(); got != 0o777 {
		t.Errorf("planted dir %s has mode %#o, want 0777 (untouched)", dir, got)
	}
	if st := fi.Sys().(*syscall.Stat_t); os.Geteuid() == 0 && st.Uid != plantedUID {
		t.Errorf("planted dir %s is owned by uid %d, want %d (untouched)", dir, st.Uid, plantedUID)
	}
}

// A cluster path too long for a unix socket puts the socket dir under
// /tmp, where any local user can create names. A directory planted at the
// name chatd used to derive from the cluster path must not become the
// server's socket dir (its creator could then reach a trust-authenticated
// superuser socket), and neither may one planted at the real socket dir's
// path while the server is stopped.
func TestPostgresDoesNotAdoptPlantedSocketDir(t *testing.T) {
	dir := filepath.Join(mustClusterDir(t), strings.Repeat("long-path-segment-", 5), "pg")
	sum := sha256.Sum256([]byte(dir))
	old := filepath.Join("/tmp", "chatd-pg-"+hex.EncodeToString(sum[:6]))
	mustPlantDir(t, old)

	pg := mustStartPostgres(t, dir)
	sock := dsnField(t, pg.DSN("postgres"), "host")
	if sock == old {
		t.Errorf("socket dir is %s, the planted directory; want a fresh one", sock)
	}
	checkUntouched(t, old)
	if !strings.HasPrefix(sock, "/tmp/") {
		t.Fatalf("socket dir %s: want one under /tmp for this long cluster path", sock)
	}

	if err := pg.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	mustPlantDir(t, sock)
	if err := pg.Restart(context.Background()); err == nil {
		t.Errorf("Restart with a planted socket dir %s: started, want an error", sock)
	}
	checkUntouched(t, sock)
}
