// Package testpgha runs a PostgreSQL primary and a streaming standby as
// real processes on loopback, for failover tests: SIGKILL the primary,
// promote the standby, and see what chatd does on a multi-host URL.
//
//	p := testpgha.Start(t, testpgha.Config{Sync: true})
//	url := p.URL("chatd") // postgres://…@127.0.0.1:P1,127.0.0.1:P2/chatd?target_session_attrs=read-write
//	p.Primary.Kill(t)
//	p.Standby.Promote(t)
//
// Each server listens on 127.0.0.1 only (no unix socket) with trust
// authentication, which is fine for a test and nothing else. When tests run
// as root the servers run as the postgres user, as embedded does.
package testpgha

import (
	"context"
	"fmt"
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
	"github.com/chatd/chatd/internal/testport"
	"github.com/jackc/pgx/v5"
)

// serverUser runs the servers when the test runs as root: PostgreSQL
// refuses to run as root.
const serverUser = "postgres"

// Config says what to start. Zero is an asynchronous standby.
type Config struct {
	// Sync makes the standby synchronous (synchronous_standby_names is its
	// application_name): a commit returns only once the standby has it.
	Sync bool
	// Databases are created on the primary before the standby is taken, so
	// they exist on both. Empty means "chatd".
	Databases []string
}

// Pair is a primary and its streaming standby.
type Pair struct {
	Primary *Server
	Standby *Server
}

// Server is one PostgreSQL server process with its data directory.
// Not safe for concurrent use.
type Server struct {
	Name string // also the standby's application_name
	Port int
	dir  string
	bin  string
	cred *syscall.Credential
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd has been waited for
	logf *os.File
}

// Start starts a primary, takes a base backup for the standby
// (pg_basebackup -R), starts the standby, waits until it streams and, with
// cfg.Sync, makes it synchronous. Everything is stopped and removed when t
// ends.
func Start(t testing.TB, cfg Config) *Pair {
	t.Helper()
	bin, err := embedded.FindBinDir()
	if err != nil {
		t.Fatalf("testpgha: %v", err)
	}
	cred := lookupCred(t)
	root, err := os.MkdirTemp("", "chatd-pgha-")
	if err != nil {
		t.Fatalf("testpgha: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	// The server user must traverse root to reach its clusters.
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatalf("testpgha: %v", err)
	}
	ports := testport.Free(t, 2)
	p := &Pair{
		Primary: &Server{Name: "primary", Port: ports[0], dir: filepath.Join(root, "primary"), bin: bin, cred: cred},
		Standby: &Server{Name: "standby", Port: ports[1], dir: filepath.Join(root, "standby"), bin: bin, cred: cred},
	}
	t.Cleanup(func() {
		p.Standby.Kill(t)
		p.Primary.Kill(t)
	})
	p.Primary.initdb(t)
	p.Primary.Start(t)
	dbs := cfg.Databases
	if len(dbs) == 0 {
		dbs = []string{"chatd"}
	}
	for _, db := range dbs {
		p.Primary.Exec(t, "postgres", "CREATE DATABASE "+pgx.Identifier{db}.Sanitize())
	}
	p.Standby.basebackup(t, p.Primary)
	p.Standby.Start(t)
	p.Primary.WaitStreaming(t, p.Standby.Name)
	if cfg.Sync {
		p.Primary.Exec(t, "postgres", "ALTER SYSTEM SET synchronous_standby_names = "+quote(p.Standby.Name))
		p.Primary.Exec(t, "postgres", "SELECT pg_reload_conf()")
		p.Primary.waitSync(t, p.Standby.Name)
	}
	return p
}

// URL is the multi-host URL of db on the pair, which picks whichever
// server accepts writes.
func (p *Pair) URL(db string) string {
	return fmt.Sprintf("postgres://%s@127.0.0.1:%d,127.0.0.1:%d/%s?sslmode=disable&target_session_attrs=read-write",
		serverUser, p.Primary.Port, p.Standby.Port, db)
}

// DSN is the URL of db on this server alone.
func (s *Server) DSN(db string) string {
	return fmt.Sprintf("postgres://%s@127.0.0.1:%d/%s?sslmode=disable", serverUser, s.Port, db)
}

// Start starts the server on its data directory and returns once it
// accepts connections (a standby accepts read-only ones).
func (s *Server) Start(t testing.TB) {
	t.Helper()
	if s.cmd != nil {
		t.Fatalf("testpgha: %s already running", s.Name)
	}
	logf, err := os.OpenFile(filepath.Join(filepath.Dir(s.dir), s.Name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatalf("testpgha: %v", err)
	}
	cmd := exec.Command(filepath.Join(s.bin, "postgres"), "-D", s.dir,
		"-c", "listen_addresses=127.0.0.1",
		"-c", "port="+strconv.Itoa(s.Port),
		"-c", "unix_socket_directories=",
		"-c", "cluster_name="+s.Name, // the walreceiver's application_name
		"-c", "max_connections=100",
		"-c", "shared_buffers=32MB",
		"-c", "fsync=on",
		"-c", "wal_sender_timeout=5s",
		"-c", "wal_receiver_status_interval=1s",
	)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	if err := cmd.Start(); err != nil {
		logf.Close()
		t.Fatalf("testpgha: start %s: %v", s.Name, err)
	}
	s.cmd, s.logf, s.done = cmd, logf, make(chan struct{})
	go func() { // owned by s: Kill and Stop wait for done
		cmd.Wait()
		close(s.done)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		conn, err := pgx.Connect(ctx, s.DSN("postgres"))
		if err == nil {
			conn.Close(ctx)
			return
		}
		select {
		case <-s.done:
			t.Fatalf("testpgha: %s exited at start; log: %s", s.Name, s.tail())
		case <-ctx.Done():
			t.Fatalf("testpgha: %s not ready: %v", s.Name, err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Kill SIGKILLs the server and its backends at once, as if its machine
// died: no shutdown checkpoint, no goodbye to clients or the standby. A
// server that is not running is left alone.
func (s *Server) Kill(t testing.TB) {
	t.Helper()
	if s.cmd == nil {
		return
	}
	// Backends make themselves process-group leaders, so a group kill
	// would miss them: kill the postmaster's children by name.
	pid := s.cmd.Process.Pid
	kids := children(pid)
	s.cmd.Process.Signal(syscall.SIGKILL)
	for _, k := range kids {
		syscall.Kill(k, syscall.SIGKILL)
	}
	s.wait(t)
}

// Stop shuts the server down cleanly (fast mode: sessions end, a
// shutdown checkpoint is written).
func (s *Server) Stop(t testing.TB) {
	t.Helper()
	if s.cmd == nil {
		return
	}
	s.cmd.Process.Signal(syscall.SIGINT)
	s.wait(t)
}

func (s *Server) wait(t testing.TB) {
	t.Helper()
	select {
	case <-s.done:
	case <-time.After(30 * time.Second):
		t.Errorf("testpgha: %s did not exit", s.Name)
	}
	s.logf.Close()
	s.cmd = nil
}

// Promote turns a standby into a primary (pg_ctl promote) and returns once
// it accepts writes.
func (s *Server) Promote(t testing.TB) {
	t.Helper()
	cmd := exec.Command(filepath.Join(s.bin, "pg_ctl"), "promote", "-w", "-t", "30", "-D", s.dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("testpgha: promote %s: %v: %s", s.Name, err, out)
	}
}

// Exec runs sql on db on this server alone.
func (s *Server) Exec(t testing.TB, db, sql string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.DSN(db))
	if err != nil {
		t.Fatalf("testpgha: connect %s: %v", s.Name, err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, sql); err != nil {
		t.Fatalf("testpgha: %s on %s: %v", sql, s.Name, err)
	}
}

// WaitStreaming waits until standby app streams from s.
func (s *Server) WaitStreaming(t testing.TB, app string) {
	t.Helper()
	s.waitReplication(t, app, "state = 'streaming'")
}

func (s *Server) waitSync(t testing.TB, app string) {
	t.Helper()
	s.waitReplication(t, app, "state = 'streaming' AND sync_state = 'sync'")
}

func (s *Server) waitReplication(t testing.TB, app, cond string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.DSN("postgres"))
	if err != nil {
		t.Fatalf("testpgha: connect %s: %v", s.Name, err)
	}
	defer conn.Close(context.Background())
	for {
		var ok bool
		err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_stat_replication WHERE application_name = $1 AND "+cond+")", app).Scan(&ok)
		if err != nil {
			t.Fatalf("testpgha: replication state of %s: %v", app, err)
		}
		if ok {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("testpgha: %s never reached %s on %s", app, cond, s.Name)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func (s *Server) initdb(t testing.TB) {
	t.Helper()
	s.mkdir(t)
	// --no-sync: the faults here kill processes, never the machine, so the
	// page cache keeps the new cluster; syncing it doubled the start on a
	// busy box. The servers themselves run with fsync on.
	cmd := exec.Command(filepath.Join(s.bin, "initdb"), "--pgdata="+s.dir, "--username="+serverUser,
		"--encoding=UTF8", "--locale=C", "--auth=trust", "--no-sync")
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("testpgha: initdb: %v: %s", err, out)
	}
}

// basebackup copies primary into s and writes standby.signal and
// primary_conninfo (-R), so s starts as its streaming standby; without a
// sync of the copy, for initdb's reason.
func (s *Server) basebackup(t testing.TB, primary *Server) {
	t.Helper()
	s.mkdir(t)
	cmd := exec.Command(filepath.Join(s.bin, "pg_basebackup"), "-D", s.dir, "-R", "-X", "stream",
		"-c", "fast", "--no-sync", "-d", fmt.Sprintf("host=127.0.0.1 port=%d user=%s", primary.Port, serverUser))
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("testpgha: pg_basebackup: %v: %s", err, out)
	}
}

func (s *Server) mkdir(t testing.TB) {
	t.Helper()
	if err := os.Mkdir(s.dir, 0o700); err != nil {
		t.Fatalf("testpgha: %v", err)
	}
	if s.cred != nil {
		if err := os.Chown(s.dir, int(s.cred.Uid), int(s.cred.Gid)); err != nil {
			t.Fatalf("testpgha: %v", err)
		}
	}
}

// tail is the end of the server's log, for a failure message.
func (s *Server) tail() string {
	b, _ := os.ReadFile(filepath.Join(filepath.Dir(s.dir), s.Name+".log"))
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}

// lookupCred is the identity to run the servers under: nil (ourselves)
// unless we are root.
func lookupCred(t testing.TB) *syscall.Credential {
	t.Helper()
	if os.Geteuid() != 0 {
		return nil
	}
	u, err := user.Lookup(serverUser)
	if err != nil {
		t.Fatalf("testpgha: tests run as root and need the %s user: %v", serverUser, err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
}

// children lists the pids whose parent is pid (from /proc).
func children(pid int) []int {
	var kids []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		k, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// The command may hold spaces and parentheses: fields follow the last ')'.
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		if len(f) > 1 && f[1] == strconv.Itoa(pid) {
			kids = append(kids, k)
		}
	}
	return kids
}

func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
