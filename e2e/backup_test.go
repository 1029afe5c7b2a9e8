package e2e_test

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chatd/chatd/internal/testpg"
	"github.com/chatd/chatd/pkg/client"
)

// backupChat is one chat of the backup test and what was accepted in it.
type backupChat struct {
	chat  string
	users [2]string
	sent  []client.Accepted
	cids  map[string]string // message id → the cid it was sent with
}

// A chatd in embedded mode (the managed PostgreSQL) takes messages in three
// chats; scripts/backup.sh dumps its database while it serves;
// scripts/restore.sh loads the dump into a fresh data dir, and chatd starts
// on it with a new JetStream store. The restored history must equal what
// was accepted (every message, its seq, id, cid and body, per chat), and
// clients on the restored node must send and receive after it: each end
// ends with the chat's whole log, old and new, once and in order.
func TestBackupRestoreIntoFreshDataDir(t *testing.T) {
	bin := mustBuildChatd(t)
	src := &chatdProc{bin: bin, dataDir: mustDataDir(t), addr: freeAddr(t)}
	src.start(t)
	t.Cleanup(func() { src.terminate(t) })
	url := "http://" + src.addr

	chats := make([]*backupChat, 3)
	for k := range chats {
		bc := &backupChat{users: [2]string{fmt.Sprintf("ba%d", k), fmt.Sprintf("bb%d", k)}, cids: map[string]string{}}
		a := mustPeer(t, url, bc.users[0], "", nil)
		bc.chat = a.mustDirect(t, bc.users[1])
		b := mustPeer(t, url, bc.users[1], "", func(c *client.Config) { c.Chats = []string{bc.chat} })
		for e, p := range []*peer{a, b} {
			prefix := fmt.Sprintf("c%d-u%d", k, e)
			for i, acc := range p.sendN(t, bc.chat, prefix, 10+5*k, 0) {
				bc.sent = append(bc.sent, acc)
				bc.cids[acc.ID] = fmt.Sprintf("%s-%d", prefix, i) // sendN's cid; the body is "prefix i"
			}
		}
		a.stop(t)
		b.stop(t)
		chats[k] = bc
	}

	dump := filepath.Join(t.TempDir(), "chatd.dump")
	runScript(t, "backup.sh", "--data-dir", src.dataDir, dump) // online: chatd serves meanwhile
	checkPrivateFile(t, dump)
	src.terminate(t)
	dst := &chatdProc{bin: bin, dataDir: mustDataDir(t), addr: freeAddr(t)}
	runScript(t, "restore.sh", "--data-dir", dst.dataDir, dump)
	dst.start(t)
	t.Cleanup(func() { dst.terminate(t) })
	url = "http://" + dst.addr

	for _, bc := range chats {
		checkRestoredHistory(t, url, bc)
		// Both ends on the restored node: each sends five more and must
		// end with the whole chat, restored part first.
		a := mustPeer(t, url, bc.users[0], "", func(c *client.Config) { c.Chats = []string{bc.chat} })
		b := mustPeer(t, url, bc.users[1], "", func(c *client.Config) { c.Chats = []string{bc.chat} })
		newA := a.sendN(t, bc.chat, "after-a", 5, 0)
		newB := b.sendN(t, bc.chat, "after-b", 5, 0)
		all := idsAfter(0, bc.sent, newA, newB)
		a.reconcile(t, bc.chat, 1, all, 20*time.Second)
		b.reconcile(t, bc.chat, 1, all, 20*time.Second)
		if first := slices.MinFunc(slices.Concat(newA, newB), func(x, y client.Accepted) int { return cmp.Compare(x.Seq, y.Seq) }); first.Seq != int64(len(bc.sent))+1 {
			t.Errorf("chat %s: first seq after the restore is %d, want %d (the restored last + 1)", bc.chat, first.Seq, len(bc.sent)+1)
		}
	}
}

// The dump holds every message ever accepted, so backup.sh must write it
// readable by its owner only even when the caller's umask would let others
// read what it creates (022, the common default).
func TestBackupDumpIsPrivate(t *testing.T) {
	dump := filepath.Join(t.TempDir(), "chatd.dump")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	script := filepath.Join("..", "scripts", "backup.sh")
	cmd := exec.CommandContext(ctx, "sh", "-c", `umask 022 && exec "$@"`, "sh", script, "--database-url", testpg.NewDatabase(t), dump)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("backup.sh: %v\n%s", err, out)
	}
	checkPrivateFile(t, dump)
}

// checkPrivateFile fails the test unless path is a file only its owner can
// read or write.
func checkPrivateFile(t *testing.T, path string) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != 0o600 {
		t.Errorf("%s has mode %#o, want 0600", path, got)
	}
}

// checkRestoredHistory compares the restored node's history of bc's chat
// with what the original node accepted: the same messages, seqs 1..n, ids,
// cids and bodies.
func checkRestoredHistory(t *testing.T, url string, bc *backupChat) {
	t.Helper()
	reader := newClient(t, url, bc.users[0], "", nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	page, err := reader.History(ctx, bc.chat, 0, 1000)
	if err != nil {
		t.Fatalf("history of %s on the restored node: %v", bc.chat, err)
	}
	want := slices.SortedFunc(slices.Values(bc.sent), func(x, y client.Accepted) int { return cmp.Compare(x.Seq, y.Seq) })
	if len(page.Messages) != len(want) {
		t.Fatalf("chat %s: restored history has %d messages, want %d", bc.chat, len(page.Messages), len(want))
	}
	for i, m := range page.Messages {
		w := want[i]
		if m.ID != w.ID || m.Seq != w.Seq || m.Seq != int64(i)+1 {
			t.Fatalf("chat %s: restored history[%d] is %s seq %d, want %s seq %d", bc.chat, i, m.ID, m.Seq, w.ID, w.Seq)
		}
		cid := bc.cids[m.ID]
		body := cid[:strings.LastIndexByte(cid, '-')] + " " + cid[strings.LastIndexByte(cid, '-')+1:]
		if m.CID != cid || m.Body != body {
			t.Fatalf("chat %s: restored message %s has cid %q body %q, want %q %q", bc.chat, m.ID, m.CID, m.Body, cid, body)
		}
	}
	t.Logf("chat %s: %d messages restored, seq 1..%d", bc.chat, len(want), len(want))
}

// runScript runs scripts/NAME with args and fails the test on an error.
func runScript(t *testing.T, name string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, filepath.Join("..", "scripts", name), args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
	t.Logf("%s: %s", name, out)
}
