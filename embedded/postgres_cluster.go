package embedded

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

const (
	// superuser is the role initdb creates; chatd connects as it.
	superuser = "postgres"
	// socketSubdir is the private socket directory inside the cluster dir.
	// The cluster dir is mode 0700, so only the server user and root can
	// reach the socket.
	socketSubdir = "socket"
	// maxSocketPath is the longest unix socket path PostgreSQL accepts
	// (sizeof(sun_path) minus the terminating NUL on Linux).
	maxSocketPath = 107
	// orphanWait bounds how long a start waits for a previous postgres on the
	// same cluster, still shutting down after chatd died, to exit.
	orphanWait = 15 * time.Second
)

// initCluster runs initdb unless dataDir already holds a cluster. It
// initializes into a sibling directory and renames it into place, so a
// chatd killed half-way through leaves no half-made cluster behind.
func initCluster(ctx context.Context, binDir, dataDir string, as runAs) (created bool, err error) {
	if _, err := os.Stat(filepath.Join(dataDir, "PG_VERSION")); err == nil {
		return false, nil
	}
	if entries, err := os.ReadDir(dataDir); err == nil && len(entries) > 0 {
		return false, fmt.Errorf("%s is not empty and holds no PostgreSQL cluster (no PG_VERSION); move it away or choose another data dir", dataDir)
	}
	tmp := dataDir + ".initdb"
	if err := os.RemoveAll(tmp); err != nil {
		return false, fmt.Errorf("remove stale %s: %w", tmp, err)
	}
	if err := os.Mkdir(tmp, 0o700); err != nil {
		return false, fmt.Errorf("initdb: %w", err)
	}
	defer os.RemoveAll(tmp)
	if err := as.own(tmp); err != nil {
		return false, fmt.Errorf("initdb: %w", err)
	}
	cmd := exec.CommandContext(ctx, filepath.Join(binDir, "initdb"),
		"--pgdata="+tmp,
		"--username="+superuser,
		"--encoding=UTF8",
		// C collation sorts by bytes and needs no OS locale installed.
		"--locale=C",
		// Trust is safe only because the server opens no TCP port
		// (listen_addresses is empty) and its socket sits in a 0700
		// directory of the server's user: only that user and root (chatd
		// run as root) can reach it. No password to generate or store.
		// TCP is rejected as well, should a listener ever be configured.
		"--auth-local=trust",
		"--auth-host=reject",
	)
	cmd.Dir = tmp
	cmd.Env = serverEnv()
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: as.cred}
	if out, err := cmd.CombinedOutput(); err != nil {
		return false, fmt.Errorf("initdb %s: %w: %s", dataDir, err, strings.TrimSpace(string(out)))
	}
	// rename(2) replaces an empty directory, so a pre-created dataDir is fine.
	if err := os.Rename(tmp, dataDir); err != nil {
		return false, fmt.Errorf("initdb: move cluster into place: %w", err)
	}
	return true, nil
}

// serverEnv is the environment for initdb and postgres: ours minus PG*
// variables, which would override what we pass on the command line
// (PGDATA, PGPORT, PGOPTIONS...) or confuse the tools, and with a fixed
// message locale so logs and errors read the same everywhere.
func serverEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "PG") || strings.HasPrefix(kv, "LC_") || strings.HasPrefix(kv, "LANG") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "LC_ALL=C")
}

// prepareSocketDir creates the private socket directory for the cluster
// and returns its path. It is <dataDir>/socket unless that path is too long
// for a unix socket, in which case it is a new directory under /tmp with a
// random name: anyone can create names in /tmp, so a name derived from
// dataDir alone could be planted in advance by another local user, who
// would then reach the server's trust-authenticated socket.
func prepareSocketDir(dataDir string, as runAs) (string, error) {
	dir := filepath.Join(dataDir, socketSubdir)
	if len(dir)+len("/.s.PGSQL.65535") > maxSocketPath {
		sum := sha256.Sum256([]byte(dataDir))
		var err error
		if dir, err = os.MkdirTemp("/tmp", "chatd-pg-"+hex.EncodeToString(sum[:6])+"-"); err != nil {
			return "", fmt.Errorf("socket dir: %w", err)
		}
	}
	return dir, ensureSocketDir(dir, as)
}

// ensureSocketDir makes dir the server user's private directory, creating
// it if it is missing (a restart after a stop removed the /tmp one). A
// directory that exists already is used only if we or the server user own
// it: one created by anyone else, or a symlink, is refused, never chowned.
// The checks and changes go through one open descriptor, so the path
// cannot be swapped between them.
func ensureSocketDir(dir string, as runAs) error {
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("socket dir: %w", err)
	}
	f, err := os.OpenFile(dir, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return fmt.Errorf("socket dir %s (a directory, not a symlink): %w", dir, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("socket dir: %w", err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fmt.Errorf("socket dir %s: no owner information", dir)
	}
	if owner := int(st.Uid); owner != os.Geteuid() && owner != as.uid() {
		return fmt.Errorf("socket dir %s is owned by uid %d, not by chatd or the server user; remove it", dir, owner)
	}
	if as.cred != nil {
		if err := f.Chown(int(as.cred.Uid), int(as.cred.Gid)); err != nil {
			return fmt.Errorf("socket dir: %w", err)
		}
	}
	if err := f.Chmod(0o700); err != nil {
		return fmt.Errorf("socket dir: %w", err)
	}
	return nil
}

// waitOrphan handles a postmaster.pid left by an earlier run.
//
//   - pid dead (the usual case after a crash): PostgreSQL itself treats the
//     file as stale and starts normally; nothing to do.
//   - pid is a postgres process (our previous child still in its immediate
//     shutdown after chatd died, or any server we cannot tell apart from
//     one): wait for it to exit, and fail after orphanWait rather than risk
//     two servers on one cluster.
//   - pid reused by an unrelated program: PostgreSQL would take it for a
//     running postmaster and refuse to start, so remove the stale file.
func waitOrphan(ctx context.Context, dataDir string) error {
	pidFile := filepath.Join(dataDir, "postmaster.pid")
	pid, err := readPidFile(pidFile)
	if err != nil || !processAlive(pid) {
		return nil
	}
	if isPostgres, known := postgresProcess(pid); known && !isPostgres {
		if err := os.Remove(pidFile); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("remove stale %s: %w", pidFile, err)
		}
		return nil
	}
	deadline := time.Now().Add(orphanWait)
	for processAlive(pid) {
		if time.Now().After(deadline) {
			return fmt.Errorf("postgres (pid %d) from %s is still running after %s; stop it first", pid, pidFile, orphanWait)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return nil
}

func readPidFile(path string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	return strconv.Atoi(strings.TrimSpace(line))
}

// processAlive reports whether pid exists and we may signal it. A process
// we may not signal (EPERM, only when chatd is not root) is not counted:
// PostgreSQL, running as the same user, judges such a pid file stale too.
// A zombie is dead: in a container whose init does not reap, an orphaned
// postmaster's zombie could otherwise block every later start.
func processAlive(pid int) bool {
	if pid <= 0 || syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return !errors.Is(err, os.ErrNotExist)
	}
	// The state letter follows the parenthesised command name.
	i := strings.LastIndexByte(string(b), ')')
	return i < 0 || i+2 >= len(b) || (b[i+2] != 'Z' && b[i+2] != 'X')
}

// postgresProcess reports whether pid runs a postgres binary, judged by
// /proc/<pid>/exe; known is false when that cannot be read.
func postgresProcess(pid int) (isPostgres, known bool) {
	exe, err := os.Readlink(filepath.Join("/proc", strconv.Itoa(pid), "exe"))
	if err != nil {
		return false, false
	}
	exe = strings.TrimSuffix(exe, " (deleted)")
	base := filepath.Base(exe)
	return base == "postgres" || base == "postmaster", true
}

// serverArgs is the postgres command line. Settings go on the command line
// rather than into postgresql.conf so that every start applies the current
// ones, including to clusters made by an older chatd.
func serverArgs(dataDir, socketDir string, port int) []string {
	settings := []string{
		// No TCP listener: authentication is trust, so anyone who can
		// connect is superuser (and can run programs through COPY ... TO
		// PROGRAM). Only the private unix socket below is served.
		"listen_addresses=",
		"port=" + strconv.Itoa(port),
		"unix_socket_directories=" + socketDir,
		"unix_socket_permissions=0700",
		// Names the server's processes in ps ("postgres: chatd: ...").
		"cluster_name=chatd",
		// Durability is chatd's guarantee (G1): a commit is on disk before
		// the sender hears "accepted".
		"fsync=on",
		"synchronous_commit=on",
		"full_page_writes=on",
		// Sized for a small box.
		"max_connections=200",
		"shared_buffers=128MB",
		// Logs go to our stderr pipe and from there to slog.
		"logging_collector=off",
		"log_destination=stderr",
		"log_line_prefix=",
		// Client errors (e.g. a unique violation the app handles) are the
		// app's to report; do not echo their statements.
		"log_min_error_statement=panic",
		"log_checkpoints=off",
	}
	args := []string{"-D", dataDir}
	for _, s := range settings {
		args = append(args, "-c", s)
	}
	return args
}
