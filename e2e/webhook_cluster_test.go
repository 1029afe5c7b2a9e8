package e2e_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chatd/chatd/internal/testwait"
	"github.com/chatd/chatd/pkg/client"
)

// Three chatd processes on a NATS cluster post to one webhook endpoint; the
// one delivering is SIGKILLed mid-flow. Every accepted message reaches the
// endpoint, first copies in each chat's seq order and repeats under their
// first webhook-id, and the endpoint only ever hears one node at a time:
// the killed one up to its death, then one survivor (the receiver tells
// the nodes apart by the process that owns each connection's socket).
func TestWebhookClusterNodeKilled(t *testing.T) {
	start := time.Now()
	owners := &socketOwners{}
	recv, secret := newHookReceiver(t, 20*time.Millisecond)
	srv := httptest.NewUnstartedServer(recv)
	srv.Config.ConnContext = owners.connContext
	recv.nodeOf = owners.nodeOf
	srv.Start()
	t.Cleanup(srv.Close)
	// cluster.sh passes its environment to every chatd.
	hookURL := srv.URL + "/cluster"
	t.Setenv("CHATD_WEBHOOK", hookURL)
	t.Setenv("CHATD_WEBHOOK_SECRET", secret)

	c := mustLocalCluster(t)
	nodes := []string{"chatd1", "chatd2", "chatd3"}
	addr := map[string]string{}
	for i, n := range nodes {
		addr[n] = strings.TrimPrefix(c.url(i+1), "http://")
		owners.add(c.pid(t, n), n)
	}
	delivering := func(among []string) []string {
		var on []string
		for _, n := range among {
			if hookMetric(addr[n], "chatd_webhook_delivering", hookURL) == 1 {
				on = append(on, n)
			}
		}
		return on
	}
	// theDeliverer waits until one of among delivers; two at once fail t.
	theDeliverer := func(among []string, within time.Duration, what string) string {
		var one string
		testwait.For(t, within, what, func() bool {
			on := delivering(among)
			if len(on) > 1 {
				t.Fatalf("nodes %v deliver to the webhook at once, want one", on)
			}
			if len(on) == 1 {
				one = on[0]
			}
			return one != ""
		})
		return one
	}
	first := theDeliverer(nodes, 20*time.Second, "one node delivers to the webhook")
	var survivors []string
	for _, n := range nodes {
		if n != first {
			survivors = append(survivors, n)
		}
	}

	// The sender is on a survivor, so the kill does not touch the sends.
	alice := mustPeer(t, c.url(nodeIndex(survivors[0])), "alice", "", nil)
	chats := []string{alice.mustDirect(t, "bob"), alice.mustDirect(t, "carol"), alice.mustDirect(t, "dave")}
	const each = 30
	sent := make([][]client.Accepted, len(chats))
	var wg sync.WaitGroup
	for i, chat := range chats {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sent[i] = alice.sendN(t, chat, fmt.Sprintf("c%d", i), each, 30*time.Millisecond)
		}()
	}
	testwait.For(t, 20*time.Second, "the first events reach the endpoint", func() bool { return recv.distinct(t) >= 15 })
	c.kill(t, first)
	killed := time.Now()
	atKill, inFlight := recv.snapshot()

	second := theDeliverer(survivors, 30*time.Second, "a survivor takes the webhook over")
	tookOver := time.Since(killed)
	wg.Wait()
	accepted := map[string]client.Accepted{}
	for i, accs := range sent {
		if len(accs) != each {
			t.Fatalf("chat %d: %d of %d sends accepted", i, len(accs), each)
		}
		for _, a := range accs {
			accepted[a.ID] = a
		}
	}
	testwait.For(t, 30*time.Second, "every accepted message reaches the endpoint", func() bool { return recv.distinct(t) >= len(accepted) })
	caughtUp := time.Since(killed)

	copies, _ := recv.snapshot()
	firstID, dups := checkHookCopies(t, copies, accepted)
	// One node at a time: the first node's copies, then the second's.
	byNode := map[string]int{}
	switched := false
	for i, cp := range copies {
		byNode[cp.node]++
		switch {
		case cp.node == second:
			switched = true
		case cp.node != first:
			t.Fatalf("copy %d (chat %s seq %d) came from %q; only %s, then %s, deliver", i, cp.chat, cp.seq, cp.node, first, second)
		case switched:
			t.Fatalf("copy %d (chat %s seq %d) came from %s after %s had taken over", i, cp.chat, cp.seq, first, second)
		}
	}
	if byNode[first] == 0 || byNode[second] == 0 {
		t.Fatalf("copies by node %v: want some from %s before its SIGKILL and some from %s after", byNode, first, second)
	}
	// The survivor's own count agrees with the receiver's; the third node
	// posted nothing.
	testwait.For(t, 10*time.Second, second+"'s delivered count matches the receiver's", func() bool {
		return hookMetric(addr[second], "chatd_webhook_delivered_total", hookURL) == float64(byNode[second])
	})
	for _, n := range survivors {
		if n != second {
			if got := hookMetric(addr[n], "chatd_webhook_delivered_total", hookURL); got != 0 {
				t.Fatalf("%s, standing by, counted %v webhook posts delivered, want 0", n, got)
			}
		}
	}
	t.Logf("%d events, %d copies (%d repeats under their first webhook-id): %s posted %d (%d received and %d in flight at its SIGKILL), %s took over %v later and posted %d; all delivered %v after the kill; test %v",
		len(firstID), len(copies), dups, first, byNode[first], len(atKill), inFlight, second, tookOver.Round(time.Millisecond),
		byNode[second], caughtUp.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
}

// nodeIndex is the cluster index of chatd node name ("chatd2" → 2).
func nodeIndex(name string) int {
	i, _ := strconv.Atoi(strings.TrimPrefix(name, "chatd"))
	return i
}

// socketOwners names the chatd process at the other end of a loopback
// connection: the process holding the client socket's inode, found in
// /proc when the connection is accepted.
type socketOwners struct {
	mu   sync.Mutex
	pids map[int]string // pid → node name
}

func (o *socketOwners) add(pid int, name string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.pids == nil {
		o.pids = map[int]string{}
	}
	o.pids[pid] = name
}

type ownerKey struct{}

// connContext is an http.Server ConnContext: it looks up the connection's
// owner once, while the client socket surely exists.
func (o *socketOwners) connContext(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, ownerKey{}, o.owner(c.RemoteAddr(), c.LocalAddr()))
}

func (o *socketOwners) nodeOf(r *http.Request) string {
	s, _ := r.Context().Value(ownerKey{}).(string)
	return s
}

// owner names the process whose socket has local address remote and peer
// local; "unknown: why" when none of the nodes has it.
func (o *socketOwners) owner(remote, local net.Addr) string {
	ra, la := remote.(*net.TCPAddr), local.(*net.TCPAddr)
	inode, err := socketInode(ra.Port, la.Port)
	if err != nil {
		return "unknown: " + err.Error()
	}
	want := "socket:[" + inode + "]"
	o.mu.Lock()
	defer o.mu.Unlock()
	for pid, name := range o.pids {
		fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
		for _, fd := range fds {
			if l, err := os.Readlink(filepath.Join(fmt.Sprintf("/proc/%d/fd", pid), fd.Name())); err == nil && l == want {
				return name
			}
		}
	}
	return "unknown: no node holds " + want
}

// socketInode finds the inode of the IPv4 loopback socket from port
// lport to port rport in /proc/net/tcp.
func socketInode(lport, rport int) (string, error) {
	f, err := os.Open("/proc/net/tcp")
	if err != nil {
		return "", err
	}
	defer f.Close()
	local, peer := fmt.Sprintf("0100007F:%04X", lport), fmt.Sprintf("0100007F:%04X", rport)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
		fs := strings.Fields(sc.Text())
		if len(fs) > 9 && fs[1] == local && fs[2] == peer {
			return fs[9], nil
		}
	}
	return "", fmt.Errorf("no socket 127.0.0.1:%d → :%d in /proc/net/tcp", lport, rport)
}
