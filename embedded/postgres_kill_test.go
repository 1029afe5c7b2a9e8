package embedded_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chatd/chatd/embedded"
	"github.com/jackc/pgx/v5"
)

// helperDirEnv, when set, turns TestHelperProcess into a stand-in for chatd:
// it starts embedded PostgreSQL on the named cluster dir, writes a row,
// prints READY and waits to be killed.
const helperDirEnv = "CHATD_EMBEDDED_HELPER_DIR"

func TestHelperProcess(t *testing.T) {
	dir := os.Getenv(helperDirEnv)
	if dir == "" {
		return // not a helper run: nothing to do
	}
	ctx := context.Background()
	pg, err := embedded.StartPostgres(ctx, embedded.PostgresConfig{Dir: dir})
	if err != nil {
		fmt.Println("ERROR", err)
		os.Exit(1)
	}
	conn, err := pgx.Connect(ctx, pg.DSN("postgres"))
	if err == nil {
		_, err = conn.Exec(ctx, "CREATE TABLE notes (body text); INSERT INTO notes VALUES ('committed before kill')")
	}
	if err != nil {
		fmt.Println("ERROR", err)
		os.Exit(1)
	}
	fmt.Println("READY")
	select {} // until SIGKILL
}

// TestPostgresKill9LeavesNoOrphan is the "chatd dies hard" test: SIGKILL of
// the process that owns embedded PostgreSQL must take the server down with
// it (parent-death signal), and the next start on the same cluster must be
// ready with the committed data.
func TestPostgresKill9LeavesNoOrphan(t *testing.T) {
	dir := mustClusterDir(t)
	child := startHelper(t, dir)

	pid := postmasterPid(t, dir)
	backends := childrenOf(pid)
	if len(backends) == 0 {
		t.Fatalf("postmaster %d has no children; is it really the server?", pid)
	}
	if err := child.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = child.Wait()

	deadline := time.Now().Add(10 * time.Second)
	for {
		left := clusterProcesses(dir)
		for _, p := range append([]int{pid}, backends...) {
			if alive(p) {
				left = append(left, p)
			}
		}
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("postgres processes %v still alive 10s after kill -9 of their owner", left)
		}
		time.Sleep(50 * time.Millisecond)
	}

	pg := mustStartPostgres(t, dir)
	if got, want := readNote(t, pg.DSN("postgres")), "committed before kill"; got != want {
		t.Fatalf("after kill -9 and restart: got %q, want %q", got, want)
	}
}

// startHelper re-runs this test binary as TestHelperProcess on dir and
// waits for it to print READY. Cleanup kills it if the test did not.
func startHelper(t *testing.T, dir string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), helperDirEnv+"="+dir)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})

	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	timeout := time.After(time.Minute)
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				t.Fatal("helper exited before READY")
			}
			if line == "READY" {
				go func() {
					for range lines { // drain so the helper never blocks on stdout
					}
				}()
				return cmd
			}
			if strings.HasPrefix(line, "ERROR") {
				t.Fatalf("helper: %s", line)
			}
		case <-timeout:
			t.Fatal("helper not READY within a minute")
		}
	}
}
