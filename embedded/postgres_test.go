package embedded_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chatd/chatd/embedded"
	"github.com/chatd/chatd/internal/testlog"
	"github.com/jackc/pgx/v5"
)

// mustClusterDir returns a fresh cluster dir path under os.TempDir(). Its
// parent is 0755 because, when the tests run as root, the server runs as the
// postgres user and must be able to reach it (t.TempDir() is 0700).
func mustClusterDir(t *testing.T) string {
	t.Helper()
	parent, err := os.MkdirTemp("", "chatd-embedded-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(parent) })
	if err := os.Chmod(parent, 0o755); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(parent, "pg")
}

func mustStartPostgres(t *testing.T, dir string) *embedded.Postgres {
	t.Helper()
	return mustStartPostgresLogged(t, dir, nil)
}

func mustStartPostgresLogged(t *testing.T, dir string, log *slog.Logger) *embedded.Postgres {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pg, err := embedded.StartPostgres(ctx, embedded.PostgresConfig{Dir: dir, Logger: log})
	if err != nil {
		t.Fatalf("StartPostgres: %v", err)
	}
	t.Cleanup(func() {
		if err := pg.Stop(context.Background()); err != nil {
			t.Errorf("Stop: %v", err)
		}
	})
	return pg
}

func mustConn(t *testing.T, dsn string) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect %s: %v", dsn, err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

func mustExec(t *testing.T, dsn, sql string) {
	t.Helper()
	if _, err := mustConn(t, dsn).Exec(context.Background(), sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// readNote returns the single row of the notes table the tests create.
func readNote(t *testing.T, dsn string) string {
	t.Helper()
	var got string
	if err := mustConn(t, dsn).QueryRow(context.Background(), "SELECT body FROM notes").Scan(&got); err != nil {
		t.Fatalf("read note: %v", err)
	}
	return got
}

func TestPostgresStartQueryRestartStop(t *testing.T) {
	dir := mustClusterDir(t)
	pg := mustStartPostgres(t, dir)
	dsn := pg.DSN("postgres")

	var settings [4]string
	err := mustConn(t, dsn).QueryRow(context.Background(),
		"SELECT current_setting('fsync'), current_setting('synchronous_commit'), current_setting('server_encoding'), current_setting('listen_addresses')").
		Scan(&settings[0], &settings[1], &settings[2], &settings[3])
	if err != nil {
		t.Fatal(err)
	}
	if want := [4]string{"on", "on", "UTF8", ""}; settings != want {
		t.Fatalf("settings: got %v, want %v", settings, want)
	}
	mustExec(t, dsn, "CREATE TABLE notes (body text); INSERT INTO notes VALUES ('kept')")

	port := pg.Port()
	oldPid := postmasterPid(t, dir)
	if err := pg.Restart(context.Background()); err != nil {
		t.Fatalf("Restart: %v", err)
	}
	if got := pg.Port(); got != port {
		t.Fatalf("port after restart: got %d, want %d", got, port)
	}
	if pid := postmasterPid(t, dir); pid == oldPid {
		t.Fatalf("postmaster pid %d unchanged after Restart", pid)
	}
	if got := readNote(t, dsn); got != "kept" {
		t.Fatalf("after restart: got %q, want %q", got, "kept")
	}

	pid := postmasterPid(t, dir)
	if err := pg.Stop(context.Background()); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if alive(pid) {
		t.Fatalf("postmaster %d alive after Stop", pid)
	}
	if pids := clusterProcesses(dir); len(pids) > 0 {
		t.Fatalf("processes %v still serve %s after Stop", pids, dir)
	}
	if err := pg.Stop(context.Background()); err != nil {
		t.Fatalf("second Stop: %v", err)
	}

	// A pid file naming a live unrelated process of the server's user (pid
	// reuse after a crash) must not block the next start.
	writeStalePidFile(t, dir)

	// A second start finds the existing cluster and its data.
	pg2 := mustStartPostgres(t, dir)
	if got := readNote(t, pg2.DSN("postgres")); got != "kept" {
		t.Fatalf("after stop and start: got %q, want %q", got, "kept")
	}
}

// TestPostgresSupervisorRestartsCrashedServer kills the postmaster behind
// the supervisor's back and expects it back, with its data, on the same
// port. The cluster path is too long for a unix socket inside it, which also
// covers the /tmp socket fallback.
func TestPostgresSupervisorRestartsCrashedServer(t *testing.T) {
	dir := filepath.Join(mustClusterDir(t), strings.Repeat("long-path-segment-", 5), "pg")
	var logs testlog.Buffer
	pg := mustStartPostgresLogged(t, dir, slog.New(slog.NewTextHandler(&logs, nil)))
	dsn := pg.DSN("postgres")
	if !strings.Contains(dsn, "host=/tmp/chatd-pg-") {
		t.Fatalf("DSN for a long cluster path: got %q, want a socket under /tmp", dsn)
	}
	mustExec(t, dsn, "CREATE TABLE notes (body text); INSERT INTO notes VALUES ('survives')")

	pid := postmasterPid(t, dir)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		conn, err := pgx.Connect(context.Background(), dsn)
		if err == nil {
			var got string
			err = conn.QueryRow(context.Background(), "SELECT body FROM notes").Scan(&got)
			conn.Close(context.Background())
			if err == nil {
				if got != "survives" {
					t.Fatalf("after crash: got %q, want %q", got, "survives")
				}
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("postgres not back 20s after SIGKILL: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if newPid := postmasterPid(t, dir); newPid == pid {
		t.Fatalf("postmaster pid %d unchanged after SIGKILL", pid)
	}
	if want := "level=ERROR msg=\"postgres exited unexpectedly; restarting\""; !strings.Contains(logs.String(), want) {
		t.Errorf("log after crash: want a line containing %q, got:\n%s", want, logs.String())
	}
	// A crash loop must read differently from a start: the supervisor's
	// restart says so, with its attempt number and how long it was down.
	restarted := waitLogLine(t, &logs, `msg="postgres restarted"`)
	for _, want := range []string{"attempt=1", "down=", "level=INFO"} {
		if !strings.Contains(restarted, want) {
			t.Errorf("restart log line %q: want it to contain %q", restarted, want)
		}
	}
	if n := strings.Count(logs.String(), `msg="postgres started"`); n != 1 {
		t.Errorf("\"postgres started\" logged %d times, want once (the first start):\n%s", n, logs.String())
	}

	if err := pg.Stop(context.Background()); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	sock := strings.Fields(strings.TrimPrefix(dsn, "host="))[0]
	if _, err := os.Stat(sock); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("socket dir %s after Stop: got stat error %v, want not exist", sock, err)
	}
}

func TestPostgresMissingBinariesSaysWhatToInstall(t *testing.T) {
	_, err := embedded.StartPostgres(context.Background(), embedded.PostgresConfig{Dir: mustClusterDir(t), BinDir: t.TempDir()})
	if err == nil {
		t.Fatal("got nil error for a bin dir without PostgreSQL")
	}
	if want := "apt-get install -y postgresql"; !strings.Contains(err.Error(), want) {
		t.Fatalf("got %q, want it to contain %q", err, want)
	}
}

// TestPostgresUnreachableDirKeepsClusterWhereServerCanReach is `make run`
// as root in a clone under a 0700 home: the postgres user cannot reach
// <data-dir>/pg, so the cluster lives under ReachableRoot instead, becomes
// ready, is found again by the next start with its data, and the user's
// directory keeps its mode.
func TestPostgresUnreachableDirKeepsClusterWhereServerCanReach(t *testing.T) {
	hidden, root := mustHiddenDir(t)
	dir := filepath.Join(hidden, "data", "pg")
	var logs testlog.Buffer
	start := func() *embedded.Postgres {
		t.Helper()
		pg, err := embedded.StartPostgres(context.Background(), embedded.PostgresConfig{
			Dir: dir, ReachableRoot: root, Logger: slog.New(slog.NewTextHandler(&logs, nil)),
		})
		if err != nil {
			t.Fatalf("StartPostgres on %s under a 0700 directory: %v", dir, err)
		}
		return pg
	}

	pg := start()
	got := pg.Dir()
	if !strings.HasPrefix(got, root+"/") {
		t.Fatalf("cluster dir: got %s, want one under %s", got, root)
	}
	mustExec(t, pg.DSN("postgres"), "CREATE TABLE notes (body text); INSERT INTO notes VALUES ('kept')")
	if err := pg.Stop(context.Background()); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if line := waitLogLine(t, &logs, "cannot reach"); !strings.Contains(line, got) || !strings.Contains(line, dir) {
		t.Errorf("log line %q: want it to name both %s and %s", line, dir, got)
	}

	pg = start()
	t.Cleanup(func() { _ = pg.Stop(context.Background()) })
	if pg.Dir() != got {
		t.Fatalf("cluster dir after restart: got %s, want %s", pg.Dir(), got)
	}
	if note := readNote(t, pg.DSN("postgres")); note != "kept" {
		t.Fatalf("after restart: got %q, want %q", note, "kept")
	}
	fi, err := os.Stat(hidden)
	if err != nil {
		t.Fatal(err)
	}
	if perm := fi.Mode().Perm(); perm != 0o700 {
		t.Errorf("the user's directory: mode %v after start, want 0700 untouched", perm)
	}
	fi, err = os.Stat(got)
	if err != nil {
		t.Fatal(err)
	}
	if st := fi.Sys().(*syscall.Stat_t); fi.Mode().Perm() != 0o700 || st.Uid != postgresUID(t) {
		t.Errorf("cluster dir %s: mode %v uid %d, want 0700 owned by postgres (%d)", got, fi.Mode().Perm(), st.Uid, postgresUID(t))
	}
}

// mustHiddenDir is, for a test run as root, a 0700 directory the postgres
// user cannot enter (a home, say) and the root a cluster is kept under
// instead (PostgresConfig.ReachableRoot). Other users skip: only root hands
// the server to the postgres user, so only then is a cluster kept elsewhere.
func mustHiddenDir(t *testing.T) (hidden, root string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("only root hands the server to the postgres user; as any other user the server runs as that user and reaches its own data dir")
	}
	hidden = filepath.Dir(mustClusterDir(t))
	if err := os.Chmod(hidden, 0o700); err != nil {
		t.Fatal(err)
	}
	return hidden, filepath.Join(filepath.Dir(mustClusterDir(t)), "var-lib-chatd")
}

// TestPostgresRefusesExistingClusterPostgresUserCannotReach: a cluster that
// already lives in the data dir is never moved behind the user's back; when
// the server user lost its way there, the error says how to fix it.
func TestPostgresRefusesExistingClusterPostgresUserCannotReach(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("only root hands the server to the postgres user")
	}
	dir := mustClusterDir(t)
	pg := mustStartPostgres(t, dir)
	if err := pg.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	hidden := filepath.Dir(dir)
	if err := os.Chmod(hidden, 0o700); err != nil {
		t.Fatal(err)
	}
	_, err := embedded.StartPostgres(context.Background(), embedded.PostgresConfig{Dir: dir, ReachableRoot: t.TempDir()})
	if err == nil {
		t.Fatal("got nil error for an existing cluster under a 0700 root directory")
	}
	for _, want := range []string{dir, "chmod o+x " + hidden + ","} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("got %q, want it to contain %q", err, want)
		}
	}
}

func postgresUID(t *testing.T) uint32 {
	t.Helper()
	u, err := user.Lookup("postgres")
	if err != nil {
		t.Fatal(err)
	}
	uid, err := strconv.Atoi(u.Uid)
	if err != nil {
		t.Fatal(err)
	}
	return uint32(uid)
}

func TestFindBinDir(t *testing.T) {
	dir, err := embedded.FindBinDir()
	if err != nil {
		t.Fatalf("FindBinDir: %v", err)
	}
	for _, name := range []string{"initdb", "postgres"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("FindBinDir returned %s: %v", dir, err)
		}
	}
}

// waitLogLine waits up to 10 s for a log line containing want and returns it.
func waitLogLine(t *testing.T, logs *testlog.Buffer, want string) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		for _, line := range strings.Split(logs.String(), "\n") {
			if strings.Contains(line, want) {
				return line
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no log line containing %s within 10s; log:\n%s", want, logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// writeStalePidFile writes a postmaster.pid naming a live process that is
// not postgres, running as the server's user so that PostgreSQL's own
// staleness check (kill(pid, 0)) would see it alive.
func writeStalePidFile(t *testing.T, dir string) {
	t.Helper()
	sleeper := exec.Command("sleep", "60")
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Fatal(err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		sleeper.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
	}
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = sleeper.Process.Kill()
		_ = sleeper.Wait()
	})
	content := fmt.Sprintf("%d\n%s\n", sleeper.Process.Pid, dir)
	if err := os.WriteFile(filepath.Join(dir, "postmaster.pid"), []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func postmasterPid(t *testing.T, dir string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "postmaster.pid"))
	if err != nil {
		t.Fatalf("read postmaster.pid: %v", err)
	}
	line, _, _ := strings.Cut(string(b), "\n")
	pid, err := strconv.Atoi(line)
	if err != nil {
		t.Fatalf("postmaster.pid: %v", err)
	}
	return pid
}

// alive reports whether pid is a running process; a zombie waiting to be
// reaped by init does not count.
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// The state follows the parenthesised command name.
	i := strings.LastIndexByte(string(b), ')')
	return i < 0 || i+2 >= len(b) || (b[i+2] != 'Z' && b[i+2] != 'X')
}

// childrenOf lists live processes whose parent is pid.
func childrenOf(pid int) []int {
	var kids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		fields := strings.Fields(s[i+1:])
		if len(fields) > 1 && fields[1] == strconv.Itoa(pid) && alive(p) {
			kids = append(kids, p)
		}
	}
	return kids
}

// clusterProcesses lists live processes whose command line names dir.
func clusterProcesses(dir string) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil {
			continue
		}
		if strings.Contains(string(b), dir) && alive(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}
