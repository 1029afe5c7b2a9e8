package e2e_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/chatd/chatd/pkg/stream"
)

// localCluster is scripts/cluster.sh's topology (three nats-server, one
// PostgreSQL, three chatd, all real processes on loopback) run by the script
// itself, under a test directory and on free ports.
type localCluster struct {
	dir      string
	env      []string
	httpBase int
	natsURLs string
}

// mustNATSServerBinary finds nats-server (PATH, then go install's bin dir) or installs
// go.mod's version with go install, as scripts/cluster.sh does. It skips the
// test only when nats-server is missing and cannot be installed (no module
// proxy): the fault needs a real server process to SIGKILL.
func mustNATSServerBinary(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("nats-server"); err == nil {
		return p
	}
	// go install puts it in GOBIN, or GOPATH/bin when GOBIN is empty.
	env, err := exec.Command("go", "env", "GOBIN", "GOPATH").Output()
	if err != nil {
		t.Fatalf("go env: %v", err)
	}
	gobin, gopath, _ := strings.Cut(string(env), "\n")
	if gobin == "" {
		gobin = filepath.Join(strings.TrimSpace(gopath), "bin")
	}
	bin := filepath.Join(gobin, "nats-server")
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	ver, err := exec.Command("go", "list", "-m", "-f", "{{.Version}}", "github.com/nats-io/nats-server/v2").Output()
	if err != nil {
		t.Fatalf("nats-server version from go.mod: %v", err)
	}
	mod := "github.com/nats-io/nats-server/v2@" + strings.TrimSpace(string(ver))
	if out, err := exec.Command("go", "install", mod).CombinedOutput(); err != nil {
		t.Skipf("no nats-server binary and `go install %s` failed (%v): this test needs real nats-server processes to SIGKILL\n%s", mod, err, out)
	}
	return bin
}

// freePortBase returns a base such that base+offs are all free on loopback
// now (another process could take one before the cluster binds it: a
// loopback-only race the tests accept).
func freePortBase(t *testing.T, offs ...int) int {
	t.Helper()
	for range 50 {
		base := 20000 + rand.IntN(30000)
		ok := true
		for _, o := range offs {
			ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(base+o))
			if err != nil {
				ok = false
				break
			}
			ln.Close()
		}
		if ok {
			return base
		}
	}
	t.Fatal("no free port range")
	return 0
}

// mustLocalCluster runs `scripts/cluster.sh up` with the chatd binary built
// for the test and stops the cluster (`down`) when the test ends.
func mustLocalCluster(t *testing.T) *localCluster {
	t.Helper()
	// One range for all: chatd on base+0..2, NATS (CLUSTER_NATS_PORT =
	// base+10) on +11..13, routes +21..23, monitoring +31..33.
	base := freePortBase(t, 0, 1, 2, 11, 12, 13, 21, 22, 23, 31, 32, 33)
	c := &localCluster{dir: mustDataDir(t), httpBase: base}
	natsBase := base + 10
	c.natsURLs = fmt.Sprintf("nats://127.0.0.1:%d,nats://127.0.0.1:%d,nats://127.0.0.1:%d", natsBase+1, natsBase+2, natsBase+3)
	c.env = append(os.Environ(),
		"CLUSTER_DIR="+c.dir,
		"CLUSTER_HTTP_PORT="+strconv.Itoa(c.httpBase),
		"CLUSTER_NATS_PORT="+strconv.Itoa(natsBase),
		"CHATD_BIN="+mustBuildChatd(t),
		"NATS_SERVER="+mustNATSServerBinary(t),
		"CHATD_FLAGS=--log-level warn",
	)
	// The script generates the shared secret on first start unless the
	// file exists: the test's clients sign with the test secret.
	if err := os.WriteFile(filepath.Join(c.dir, "jwt-secret"), []byte(testSecret), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if out, err := c.script("down"); err != nil {
			t.Errorf("cluster.sh down: %v\n%s", err, out)
		}
		if t.Failed() {
			c.dumpLogs(t)
		}
	})
	start := time.Now()
	if out, err := c.script("up"); err != nil {
		c.dumpLogs(t)
		t.Fatalf("cluster.sh up: %v\n%s", err, out)
	}
	t.Logf("cluster up in %v (chatd built and nats-server found before)", time.Since(start).Round(time.Millisecond))
	return c
}

// script runs scripts/cluster.sh with args in the test cluster's settings.
func (c *localCluster) script(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "../scripts/cluster.sh", args...)
	cmd.Env = c.env
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// url is chatd node i's base URL (1..3).
func (c *localCluster) url(i int) string {
	return fmt.Sprintf("http://127.0.0.1:%d", c.httpBase+i-1)
}

// pid is the recorded pid of a process of the cluster (nats1, chatd3, ...).
func (c *localCluster) pid(t *testing.T, name string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(c.dir, "pids", name+".pid"))
	if err != nil {
		t.Fatalf("pid of %s: %v", name, err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("pid of %s: %v", name, err)
	}
	return pid
}

// kill SIGKILLs a process of the cluster.
func (c *localCluster) kill(t *testing.T, name string) {
	t.Helper()
	if err := syscall.Kill(c.pid(t, name), syscall.SIGKILL); err != nil {
		t.Fatalf("SIGKILL %s: %v", name, err)
	}
}

// restart starts a process of the cluster again and waits until it is
// ready (the script's `start`).
func (c *localCluster) restart(t *testing.T, name string) {
	t.Helper()
	// The killed process is gone at once, but an orphan's zombie may stay
	// in /proc where PID 1 does not reap; the script tells the two apart.
	if out, err := c.script("start", name); err != nil {
		t.Fatalf("cluster.sh start %s: %v\n%s", name, err, out)
	}
}

// leaderWait bounds streamLeader's wait. After the leader's SIGKILL the
// survivors elect a new one only when their election timer fires, 4-9 s
// after the last heartbeat (nats-server's raft.go), and a split vote of the
// two survivors starts another 4-9 s round: CI once waited 14 s with no
// meta or stream leader while the whole suite ran under -race on two cores.
const leaderWait = 30 * time.Second

// streamLeader names the server leading the delivery stream ("n2"), asked
// of any server still up, waiting up to leaderWait for an election.
func (c *localCluster) streamLeader(t *testing.T) string {
	t.Helper()
	nc, err := nats.Connect(c.natsURLs, nats.Timeout(2*time.Second))
	if err != nil {
		t.Fatalf("connect to nats: %v", err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatalf("jetstream: %v", err)
	}
	// Each ask has its own short deadline: a leaderless meta group does not
	// answer at all, and one ask must not spend the whole wait.
	deadline := time.Now().Add(leaderWait)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		s, err := js.Stream(ctx, stream.DefaultName)
		if err == nil {
			var info *jetstream.StreamInfo
			if info, err = s.Info(ctx); err == nil && info.Cluster != nil && info.Cluster.Leader != "" {
				cancel()
				return info.Cluster.Leader
			}
		}
		cancel()
		if time.Now().After(deadline) {
			t.Fatalf("no leader of stream %s within %v (last error %v)", stream.DefaultName, leaderWait, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// dumpLogs prints the tail of every process log of the cluster.
func (c *localCluster) dumpLogs(t *testing.T) {
	t.Helper()
	logs, _ := filepath.Glob(filepath.Join(c.dir, "logs", "*.log"))
	for _, p := range logs {
		b, _ := os.ReadFile(p)
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		if len(lines) > 15 {
			lines = lines[len(lines)-15:]
		}
		t.Logf("--- %s (last %d lines)\n%s", filepath.Base(p), len(lines), strings.Join(lines, "\n"))
	}
}
