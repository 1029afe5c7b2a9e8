package e2e_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chatd/chatd/internal/testlog"
	"github.com/chatd/chatd/internal/testwait"
	"github.com/chatd/chatd/pkg/client"
)

// chatdProc is the chatd binary running as a child process in embedded
// mode (its own PostgreSQL and NATS under the data dir).
type chatdProc struct {
	bin, dataDir, addr string
	args               []string // flags added to every start
	cmd                *exec.Cmd
	out                *testlog.Buffer
}

// mustBuildChatd builds cmd/chatd into a test temp dir.
func mustBuildChatd(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "chatd")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/chatd/chatd/cmd/chatd").CombinedOutput()
	if err != nil {
		t.Fatalf("go build chatd: %v\n%s", err, out)
	}
	return bin
}

// mustDataDir makes a data dir the postgres system user can traverse
// (tests run as root and PostgreSQL runs as postgres; t.TempDir is 0700).
func mustDataDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "chatd-e2e-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// start runs chatd and waits until /readyz answers 200.
func (p *chatdProc) start(t *testing.T) {
	t.Helper()
	p.out = &testlog.Buffer{}
	args := append([]string{"--data-dir", p.dataDir, "--listen", p.addr,
		"--jwt-secret", testSecret, "--log-level", "warn"}, p.args...)
	p.cmd = exec.Command(p.bin, args...)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	if os.Getenv(logEnv) != "" {
		p.cmd.Stdout, p.cmd.Stderr = os.Stderr, os.Stderr
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start chatd: %v", err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get("http://" + p.addr + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("chatd not ready within 30s (last error %v); output:\n%s", err, p.out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// kill sends SIGKILL and reaps the process.
func (p *chatdProc) kill(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatalf("kill chatd: %v", err)
	}
	_ = p.cmd.Wait() // "signal: killed" is the expected outcome
}

// terminate asks chatd to shut down (SIGTERM) and waits; a chatd that does
// not stop within 20 s is killed and the test fails.
func (p *chatdProc) terminate(t *testing.T) {
	t.Helper()
	if p.cmd == nil || p.cmd.ProcessState != nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("chatd exited with %v after SIGTERM; output:\n%s", err, p.out.String())
		}
	case <-time.After(20 * time.Second):
		_ = p.cmd.Process.Kill()
		<-done
		t.Errorf("chatd did not stop within 20s of SIGTERM")
	}
}

// processesMentioning returns the pids whose command line contains s.
func processesMentioning(s string) []string {
	var pids []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(cmdline), s) {
			pids = append(pids, e.Name())
		}
	}
	return pids
}

// chatd SIGKILLed mid-flow and restarted: its PostgreSQL does not outlive
// it, clients reconnect and resend their unanswered sends with the same
// cid, and every accepted message is in history exactly once and reaches
// its recipient.
func TestChatdKilledMidFlowAndRestarted(t *testing.T) {
	p := &chatdProc{bin: mustBuildChatd(t), dataDir: mustDataDir(t), addr: freeAddr(t)}
	p.start(t)
	t.Cleanup(func() { p.terminate(t) })
	url := "http://" + p.addr

	alice := mustPeer(t, url, "alice", "", nil)
	chat := alice.mustDirect(t, "bob")
	bob := mustPeer(t, url, "bob", "", func(c *client.Config) { c.Chats = []string{chat} })
	bob.waitConnected(t, 1)

	// Three concurrent senders keep sends in flight, so the kill lands with
	// some of them unanswered.
	const senders, each = 3, 15
	const total = senders * each
	sent := make([][]client.Accepted, senders)
	var wg sync.WaitGroup
	for i := range senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sent[i] = alice.sendN(t, chat, fmt.Sprintf("s%d", i), each, 10*time.Millisecond)
		}()
	}
	testwait.For(t, 10*time.Second, "the first sends are accepted", func() bool { return alice.c.Stats().Accepted >= 12 })
	p.kill(t)

	pgDir := filepath.Join(p.dataDir, "pg")
	testwait.For(t, 10*time.Second, "no postgres outlives chatd", func() bool { return len(processesMentioning(pgDir)) == 0 })
	p.start(t)
	wg.Wait()
	if n := len(sent[0]) + len(sent[1]) + len(sent[2]); n != total {
		t.Fatalf("%d of %d sends accepted", n, total)
	}
	// A send accepted before the kill, repeated with its cid after the
	// restart, is answered with the original.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	again, err := alice.c.SendCID(ctx, chat, "s0-0", "s0 0")
	if err != nil || again.ID != sent[0][0].ID || again.Seq != sent[0][0].Seq {
		t.Fatalf("resend of cid s0-0 after the restart: %+v, %v; want the original %+v", again, err, sent[0][0])
	}
	all := idsAfter(0, sent...)
	bob.reconcile(t, chat, 1, all, 15*time.Second)

	// History holds each send exactly once: a resend after the kill was
	// answered with the original, not stored again.
	page, err := bob.c.History(ctx, chat, 0, 1000)
	if err != nil {
		t.Fatalf("history: %v", err)
	}
	cids := map[string]int{}
	for i, m := range page.Messages {
		if m.ID != all[i] {
			t.Fatalf("history[%d] is %s, want %s", i, m.ID, all[i])
		}
		cids[m.CID]++
	}
	if len(page.Messages) != total || len(cids) != total {
		t.Fatalf("history holds %d messages with %d distinct cids, want %d of each", len(page.Messages), len(cids), total)
	}
	st := alice.c.Stats()
	t.Logf("sender: %d resends after the kill; recipient: %+v", st.Resends, bob.c.Stats())
	if st.Connects < 2 {
		t.Fatalf("the sender never reconnected (stats %+v)", st)
	}
}
