package e2e_test

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chatd/chatd/internal/testpg"
	"github.com/chatd/chatd/internal/testport"
	"github.com/chatd/chatd/internal/testtool"
	"github.com/chatd/chatd/internal/testwait"
	"github.com/chatd/chatd/pkg/client"
	"github.com/chatd/chatd/pkg/node"
)

var (
	// caddySite is the compose proxy's site address line.
	caddySite = regexp.MustCompile(`(?m)^:8080 \{$`)
	// caddyUpstreamList is its reverse_proxy line's upstreams.
	caddyUpstreamList = regexp.MustCompile(`(?m)^(\s*reverse_proxy)((?:\s+chatd-\d+:8080)+)(\s*\{)$`)
)

// caddySetting reads a setting's one value from a Caddyfile.
func caddySetting(conf, name string) (string, bool) {
	m := regexp.MustCompile(`(?m)^\s*` + regexp.QuoteMeta(name) + `\s+(\S+)$`).FindStringSubmatch(conf)
	if m == nil {
		return "", false
	}
	return m[1], true
}

// The compose proxy's Caddyfile, run by the real Caddy in front of two
// nodes (caddy validate checks only that it parses): REST and WebSockets
// pass through it, /metrics does not, and a node that drains (its /readyz
// 503 during --shutdown-delay, as compose sets it) gets no new sockets
// while it still serves; its clients then move to the other node through
// the proxy and nothing sent is lost.
func TestComposeCaddyfileInFrontOfTwoNodes(t *testing.T) {
	const shutdownDelay = 5 * time.Second // compose.yaml's --shutdown-delay
	dsn := testpg.NewDatabase(t)
	ns := mustNATS(t, t.TempDir(), "127.0.0.1:0")
	a := mustRunNode(t, nodeConfig(dsn, ns.ClientURL(), "a", node.Config{ShutdownDelay: shutdownDelay}))
	b := mustRunNode(t, nodeConfig(dsn, ns.ClientURL(), "b", node.Config{ShutdownDelay: shutdownDelay}))
	proxy, noticeWithin := runComposeCaddy(t, a.URL(), b.URL())
	if noticeWithin >= shutdownDelay {
		t.Fatalf("the proxy notices a draining node within %v, not within the %v it drains", noticeWithin, shutdownDelay)
	}

	for path, want := range map[string]int{"/metrics": http.StatusNotFound, "/readyz": http.StatusOK} {
		resp, err := http.Get(proxy + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET %s through the proxy: %d, want %d", path, resp.StatusCode, want)
		}
	}

	alice := mustPeer(t, proxy, "alice", "", nil)
	chat := alice.mustDirect(t, "bob")
	alice.c.Track(chat)
	bob := mustPeer(t, proxy, "bob", "", func(c *client.Config) { c.Chats = []string{chat} })
	alice.waitConnected(t, 1)
	bob.waitConnected(t, 1)
	sent := alice.sendN(t, chat, "before", 10, 0)
	sent = append(sent, bob.sendN(t, chat, "bob-before", 10, 0)...)
	bob.reconcile(t, chat, 1, idsAfter(0, sent), 10*time.Second)

	// Node a drains: still serving, /readyz 503. Once the proxy's health
	// check has seen that, new sockets go to b only.
	conns := func(n *runningNode) float64 { return n.metric(t, "chatd_ws_connections") }
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := a.stop(t); err != nil {
			t.Errorf("node a: %v", err)
		}
	}()
	time.Sleep(noticeWithin)
	onA, onB := conns(a), conns(b)
	// Four new sockets: least_conn would send about half of them to a if
	// the proxy still took it for healthy.
	var pairs [][2]*peer
	var chats []string
	for _, names := range [][2]string{{"carol", "dave"}, {"erin", "frank"}} {
		first := mustPeer(t, proxy, names[0], "", nil)
		c := first.mustDirect(t, names[1])
		first.c.Track(c)
		second := mustPeer(t, proxy, names[1], "", func(cfg *client.Config) { cfg.Chats = []string{c} })
		first.waitConnected(t, 1)
		second.waitConnected(t, 1)
		pairs = append(pairs, [2]*peer{first, second})
		chats = append(chats, c)
	}
	if got := conns(a); got > onA {
		t.Errorf("node a, draining, took %v of 4 new sockets through the proxy", got-onA)
	}
	if got := conns(b); got < onB+4 {
		t.Errorf("node b took %v of the 4 new sockets", got-onB)
	}
	wg.Wait()

	// a is gone: everyone is on b, and what they send arrives, with
	// everything sent before.
	sent = append(sent, alice.sendN(t, chat, "after", 10, 0)...)
	sent = append(sent, bob.sendN(t, chat, "bob-after", 10, 0)...)
	alice.reconcile(t, chat, 1, idsAfter(0, sent), 15*time.Second)
	bob.reconcile(t, chat, 1, idsAfter(0, sent), 15*time.Second)
	for i, p := range pairs {
		other := p[0].sendN(t, chats[i], "p", 5, 0)
		p[1].reconcile(t, chats[i], 1, idsAfter(0, other), 10*time.Second)
	}
	testwait.For(t, 10*time.Second, "every socket on node b", func() bool { return conns(b) >= 6 })
}

// runComposeCaddy runs Caddy with deploy/compose/Caddyfile, its site on a
// free loopback port and its upstreams the given nodes instead of the
// compose services, until the test ends. It returns the proxy's URL and
// how long its active health checks may take to notice a node gone
// unready (health_interval plus health_timeout, and a margin).
func runComposeCaddy(t *testing.T, upstreams ...string) (string, time.Duration) {
	t.Helper()
	bin := testtool.Path(t, "caddy")
	src, err := os.ReadFile("../deploy/compose/Caddyfile")
	if err != nil {
		t.Fatal(err)
	}
	conf := string(src)
	port := testport.Free(t, 1)[0]
	addr := "127.0.0.1:" + strconv.Itoa(port)
	if !caddySite.MatchString(conf) || !caddyUpstreamList.MatchString(conf) {
		t.Fatalf("deploy/compose/Caddyfile: no `:8080 {` site or `reverse_proxy chatd-N:8080 … {` line to point at the test's nodes:\n%s", conf)
	}
	hosts := make([]string, len(upstreams))
	for i, u := range upstreams {
		hosts[i] = strings.TrimPrefix(u, "http://")
	}
	// No admin endpoint (it has a fixed port) and no HTTPS for a loopback site.
	conf = "{\n\tadmin off\n\tauto_https off\n\tpersist_config off\n}\n\n" +
		caddySite.ReplaceAllString(conf, "http://"+addr+" {")
	conf = caddyUpstreamList.ReplaceAllString(conf, "${1} "+strings.Join(hosts, " ")+"${3}")
	var notice time.Duration
	for _, name := range []string{"health_interval", "health_timeout"} {
		v, ok := caddySetting(conf, name)
		if !ok {
			t.Fatalf("Caddyfile: no %s", name)
		}
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("Caddyfile %s: %v", name, err)
		}
		notice += d
	}
	notice += 500 * time.Millisecond

	dir := t.TempDir()
	file := filepath.Join(dir, "Caddyfile")
	if err := os.WriteFile(file, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	logf, err := os.Create(filepath.Join(dir, "caddy.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "run", "--adapter", "caddyfile", "--config", file)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = append(os.Environ(), "HOME="+dir, "XDG_DATA_HOME="+dir, "XDG_CONFIG_HOME="+dir)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		logf.Close()
		if t.Failed() {
			out, _ := os.ReadFile(logf.Name())
			t.Logf("caddy's log:\n%s", out)
		}
	})
	url := "http://" + addr
	testwait.For(t, 15*time.Second, "caddy answers /readyz", func() bool {
		resp, err := http.Get(url + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return url, notice
}
