package embedded_test

import (
	"bufio"
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
)

// TestPostgresRefusesOtherLocalUsers is the "any local user is superuser"
// check: the managed server trusts whoever reaches it, so nothing but chatd
// (and the server's own user) may reach it. Another OS user gets neither a
// TCP connection nor a way into the socket directory.
func TestPostgresRefusesOtherLocalUsers(t *testing.T) {
	pg := mustStartPostgres(t, mustClusterDir(t))
	dsn := pg.DSN("postgres")
	if err := mustConn(t, dsn).Ping(context.Background()); err != nil {
		t.Fatalf("chatd's own connection: %v", err)
	}
	if ports := tcpListenPorts(t, postmasterPid(t, pg.Dir())); len(ports) > 0 {
		t.Errorf("postmaster listens on TCP ports %v, want none", ports)
	}

	if os.Geteuid() != 0 {
		t.Skip("the other-user half needs root to run psql as nobody; the TCP half above ran")
	}
	sockDir := dsnField(t, dsn, "host")
	port := strconv.Itoa(pg.Port())
	for _, host := range []string{"127.0.0.1", sockDir} {
		out, err := psqlAsNobody(t, host, port)
		if err == nil {
			t.Errorf("psql as nobody -h %s -p %s: connected (%s), want refused", host, port, out)
		}
	}
	// The refusal is the directory, not a fluke of the socket file.
	fi, err := os.Stat(sockDir)
	if err != nil {
		t.Fatal(err)
	}
	if perm := fi.Mode().Perm(); perm != 0o700 {
		t.Errorf("socket dir %s mode: got %v, want 0700", sockDir, perm)
	}
}

// psqlAsNobody runs psql as the nobody user against host and port and
// returns its output.
func psqlAsNobody(t *testing.T, host, port string) (string, error) {
	t.Helper()
	u, err := user.Lookup("nobody")
	if err != nil {
		t.Fatalf("user nobody: %v", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "psql", "-X", "-w", "-h", host, "-p", port, "-U", "postgres", "-d", "postgres", "-c", "SELECT 1")
	cmd.Dir = "/"
	cmd.Env = []string{"PATH=/usr/bin:/bin", "PGCONNECT_TIMEOUT=3", "HOME=/nonexistent"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// dsnField returns one keyword's value of a keyword/value DSN without quotes.
func dsnField(t *testing.T, dsn, key string) string {
	t.Helper()
	for _, f := range strings.Fields(dsn) {
		if v, ok := strings.CutPrefix(f, key+"="); ok {
			return v
		}
	}
	t.Fatalf("DSN %q has no %s", dsn, key)
	return ""
}

// tcpListenPorts lists the TCP ports pid listens on, read from /proc: the
// socket inodes among its fds matched against the kernel's listen table.
func tcpListenPorts(t *testing.T, pid int) []int {
	t.Helper()
	inodes := map[string]bool{}
	fdDir := filepath.Join("/proc", strconv.Itoa(pid), "fd")
	fds, err := os.ReadDir(fdDir)
	if err != nil {
		t.Fatalf("read %s: %v", fdDir, err)
	}
	for _, fd := range fds {
		link, err := os.Readlink(filepath.Join(fdDir, fd.Name()))
		if ino, ok := strings.CutPrefix(link, "socket:["); ok && err == nil {
			inodes[strings.TrimSuffix(ino, "]")] = true
		}
	}
	var ports []int
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		f, err := os.Open(table)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			// sl local_address rem_address st ... inode (field 9)
			fields := strings.Fields(sc.Text())
			if len(fields) < 10 || fields[3] != "0A" || !inodes[fields[9]] {
				continue
			}
			_, hexPort, _ := strings.Cut(fields[1], ":")
			var p int
			if _, err := fmt.Sscanf(hexPort, "%X", &p); err == nil {
				ports = append(ports, p)
			}
		}
		f.Close()
	}
	return ports
}
