package testpgha

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/chatd/chatd/embedded"
	"github.com/chatd/chatd/internal/testport"
	"github.com/jackc/pgx/v5"
)

// AutoFailover is pg_auto_failover (Debian's postgresql-15-auto-failover)
// running a monitor and two PostgreSQL nodes on loopback: the monitor
// promotes the secondary by itself when the primary is lost, as an
// operator's setup would. pg_auto_failover makes the secondary synchronous
// (synchronous_standby_names = 'ANY 1 (…)').
type AutoFailover struct {
	Monitor *Keeper
	Nodes   [2]*Keeper
	root    string
	cred    *syscall.Credential
}

// Keeper is one `pg_autoctl … --run` process and the PostgreSQL it runs.
type Keeper struct {
	Name string
	Port int
	dir  string
	cmd  *exec.Cmd
	done chan struct{}
}

// StartAutoFailover starts the monitor, then node 1 (primary) and node 2
// (secondary), and returns once node 2 is a secondary. The monitor's
// health checks are shortened so a failover takes seconds, not the
// defaults' half minute. It fails t if pg_autoctl is not installed.
func StartAutoFailover(t testing.TB) *AutoFailover {
	t.Helper()
	bin, err := exec.LookPath("pg_autoctl")
	if err != nil {
		t.Fatalf("testpgha: pg_autoctl not found (apt-get install postgresql-15-auto-failover): %v", err)
	}
	root, err := os.MkdirTemp("", "chatd-pgaf-")
	if err != nil {
		t.Fatalf("testpgha: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	cred := lookupCred(t)
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatalf("testpgha: %v", err)
	}
	if cred != nil {
		os.Chown(root, int(cred.Uid), int(cred.Gid))
	}
	ports := testport.Free(t, 3)
	af := &AutoFailover{root: root, cred: cred}
	af.Monitor = &Keeper{Name: "monitor", Port: ports[0], dir: filepath.Join(root, "monitor")}
	for i := range af.Nodes {
		af.Nodes[i] = &Keeper{Name: fmt.Sprintf("node_%d", i+1), Port: ports[i+1], dir: filepath.Join(root, fmt.Sprintf("node%d", i+1))}
	}
	t.Cleanup(func() {
		for _, k := range append([]*Keeper{af.Nodes[1], af.Nodes[0]}, af.Monitor) {
			k.Kill(t)
		}
	})
	pgctl := filepath.Join(mustBinDir(t), "pg_ctl")
	common := []string{"--hostname", "127.0.0.1", "--auth", "trust", "--no-ssl", "--pgctl", pgctl}
	af.start(t, af.Monitor, bin, append([]string{"create", "monitor", "--pgport", strconv.Itoa(af.Monitor.Port), "--run"}, common...))
	waitConnect(t, af.Monitor.DSN("pg_auto_failover"))
	for _, q := range []string{
		"ALTER SYSTEM SET pgautofailover.health_check_period = 500",
		"ALTER SYSTEM SET pgautofailover.health_check_retry_delay = 200",
		"ALTER SYSTEM SET pgautofailover.health_check_max_retries = 1",
		"ALTER SYSTEM SET pgautofailover.node_considered_unhealthy_timeout = 2000",
		"ALTER SYSTEM SET pgautofailover.primary_demote_timeout = 2000",
		"SELECT pg_reload_conf()",
	} {
		mustExec(t, af.Monitor.DSN("pg_auto_failover"), q)
	}
	monitor := fmt.Sprintf("postgres://autoctl_node@127.0.0.1:%d/pg_auto_failover?sslmode=disable", af.Monitor.Port)
	for i, n := range af.Nodes {
		af.start(t, n, bin, append([]string{"create", "postgres", "--pgport", strconv.Itoa(n.Port), "--monitor", monitor,
			"--dbname", "chatd", "--name", n.Name, "--run"}, common...))
		want := "single" // alone until a secondary joins
		if i == 1 {
			want = "secondary"
		}
		af.WaitState(t, n.Name, want, 50*time.Second, func() {
			// pg_basebackup waits for a checkpoint; do not wait for the timer.
			if i == 1 {
				exec1(af.Nodes[0].DSN("postgres"), "CHECKPOINT")
			}
		})
	}
	af.WaitState(t, af.Nodes[0].Name, "primary", 30*time.Second, nil)
	return af
}

// URL is the multi-host URL of db on the two nodes.
func (af *AutoFailover) URL(db string) string {
	return fmt.Sprintf("postgres://%s@127.0.0.1:%d,127.0.0.1:%d/%s?sslmode=disable&target_session_attrs=read-write",
		serverUser, af.Nodes[0].Port, af.Nodes[1].Port, db)
}

// DSN is the URL of db on this keeper's server alone.
func (k *Keeper) DSN(db string) string {
	return fmt.Sprintf("postgres://%s@127.0.0.1:%d/%s?sslmode=disable", serverUser, k.Port, db)
}

// WaitState waits until the monitor reports node name in state (for
// example "primary", "secondary"), calling poke, if set, while it waits.
func (af *AutoFailover) WaitState(t testing.TB, name, state string, within time.Duration, poke func()) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		var got string
		conn, err := pgx.Connect(context.Background(), af.Monitor.DSN("pg_auto_failover"))
		if err == nil {
			err = conn.QueryRow(context.Background(),
				"SELECT reportedstate::text FROM pgautofailover.node WHERE nodename = $1", name).Scan(&got)
			conn.Close(context.Background())
		}
		if got == state {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("testpgha: %s is %q (%v), want %q within %v", name, got, err, state, within)
		}
		if poke != nil {
			poke()
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func (af *AutoFailover) start(t testing.TB, k *Keeper, bin string, args []string) {
	t.Helper()
	logf, err := os.Create(filepath.Join(af.root, k.Name+".log"))
	if err != nil {
		t.Fatalf("testpgha: %v", err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = af.root
	cmd.Env = append(os.Environ(), "PGDATA="+k.dir, "LC_ALL=C", "HOME="+af.root,
		"XDG_CONFIG_HOME="+filepath.Join(af.root, "config-"+k.Name), "XDG_DATA_HOME="+filepath.Join(af.root, "data-"+k.Name),
		"XDG_RUNTIME_DIR="+filepath.Join(af.root, "run-"+k.Name))
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: af.cred, Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("testpgha: start %s: %v", k.Name, err)
	}
	k.cmd, k.done = cmd, make(chan struct{})
	go func() { // owned by k: Kill waits for done
		cmd.Wait()
		logf.Close()
		close(k.done)
	}()
}

// Kill SIGKILLs the keeper, its PostgreSQL and every process under it, as
// if the machine died.
func (k *Keeper) Kill(t testing.TB) {
	t.Helper()
	if k.cmd == nil {
		return
	}
	pids := descendants(k.cmd.Process.Pid)
	syscall.Kill(-k.cmd.Process.Pid, syscall.SIGKILL)
	for _, p := range pids {
		syscall.Kill(p, syscall.SIGKILL)
	}
	select {
	case <-k.done:
	case <-time.After(30 * time.Second):
		t.Errorf("testpgha: %s did not exit", k.Name)
	}
	k.cmd = nil
}

// descendants lists every process under pid.
func descendants(pid int) []int {
	var all []int
	for queue := []int{pid}; len(queue) > 0; queue = queue[1:] {
		kids := children(queue[0])
		all = append(all, kids...)
		queue = append(queue, kids...)
	}
	return all
}

func mustBinDir(t testing.TB) string {
	t.Helper()
	bin, err := embedded.FindBinDir()
	if err != nil {
		t.Fatalf("testpgha: %v", err)
	}
	return bin
}

func waitConnect(t testing.TB, dsn string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for exec1(dsn, "SELECT 1") != nil {
		if time.Now().After(deadline) {
			t.Fatalf("testpgha: %s not ready: %v", dsn, exec1(dsn, "SELECT 1"))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func mustExec(t testing.TB, dsn, sql string) {
	t.Helper()
	if err := exec1(dsn, sql); err != nil {
		t.Fatalf("testpgha: %s: %v", sql, err)
	}
}

func exec1(dsn, sql string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, sql)
	return err
}
