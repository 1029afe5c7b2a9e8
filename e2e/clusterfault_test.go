package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chatd/chatd/internal/testwait"
	"github.com/chatd/chatd/pkg/api/apitest"
	"github.com/chatd/chatd/pkg/client"
)

// clusterPair is one direct chat of the load: two clients on different
// nodes, each sending to the other.
type clusterPair struct {
	chat string
	ends [2]*peer
	sent [2][]client.Accepted
}

// The local cluster of `make cluster` (three nats-server, one PostgreSQL,
// three chatd, all real processes started by scripts/cluster.sh) under load
// from 30 clients spread over the three nodes, each pair across two nodes
// so every message crosses the relay, the stream and another node's
// consumer. Mid-run the nats-server leading the delivery stream is
// SIGKILLed, then one chatd node; both are restarted. The clients of the
// killed node move to the next node, as behind a load balancer, and resend
// what was unanswered. In the end every accepted message is at both ends of
// its chat exactly once, in seq order: lost 0, no duplicate handed out.
func TestLocalClusterKillStreamLeaderAndNode(t *testing.T) {
	const (
		pairs   = 15
		perSec  = 10 // per client: 300 msg/s in all
		runFor  = 20 * time.Second
		killAt  = 5 * time.Second
		downFor = 5 * time.Second
		victim  = 3 // the chatd node killed
	)
	c := mustLocalCluster(t)

	ps := make([]*clusterPair, pairs)
	for k := range ps {
		// Ends on nodes k%3+1 and (k+1)%3+1; each lists the other nodes
		// after its own, in order, to move to when its session ends.
		na, nb := k%3+1, (k+1)%3+1
		ua, ub := fmt.Sprintf("ca%d", k), fmt.Sprintf("cb%d", k)
		a := runPeer(t, newClient(t, c.url(na), ua, "", func(cfg *client.Config) { cfg.URLs = c.others(na) }))
		chat := a.mustDirect(t, ub)
		a.c.Track(chat)
		b := runPeer(t, newClient(t, c.url(nb), ub, "", func(cfg *client.Config) {
			cfg.URLs = c.others(nb)
			cfg.Chats = []string{chat}
		}))
		ps[k] = &clusterPair{chat: chat, ends: [2]*peer{a, b}}
	}
	for _, p := range ps {
		p.ends[1].waitConnected(t, 1)
	}

	var accepted atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for k, p := range ps {
		for e := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				p.sent[e] = sendPaced(t, p.ends[e], p.chat, fmt.Sprintf("p%d-%d", k, e), perSec, stop, &accepted)
			}()
		}
	}
	start := time.Now()
	stopOnce := sync.OnceFunc(func() { close(stop) })
	t.Cleanup(func() { stopOnce(); wg.Wait() })

	time.Sleep(killAt)
	leader := c.streamLeader(t)
	before := accepted.Load()
	c.kill(t, "nats"+leader[1:])
	t.Logf("t=%v: SIGKILL nats-server %s (stream leader); %d accepted so far", time.Since(start).Round(time.Millisecond), leader, before)
	time.Sleep(time.Second)
	c.kill(t, fmt.Sprintf("chatd%d", victim))
	t.Logf("t=%v: SIGKILL chatd n%d", time.Since(start).Round(time.Millisecond), victim)
	time.Sleep(downFor)
	c.restart(t, "nats"+leader[1:])
	c.restart(t, fmt.Sprintf("chatd%d", victim))
	t.Logf("t=%v: both restarted; stream leader now %s; %d accepted while they were down",
		time.Since(start).Round(time.Millisecond), c.streamLeader(t), accepted.Load()-before)
	if rest := runFor - time.Since(start); rest > 0 {
		time.Sleep(rest)
	}
	stopOnce()
	wg.Wait()

	total := 0
	for _, p := range ps {
		want := idsAfter(0, p.sent[0], p.sent[1])
		total += len(want)
		for _, end := range p.ends {
			end.reconcile(t, p.chat, 1, want, 60*time.Second)
		}
	}
	var resends, connects int64
	for _, p := range ps {
		for _, end := range p.ends {
			st := end.c.Stats()
			resends += st.Resends
			connects += st.Connects
		}
	}
	t.Logf("%d messages accepted in %d chats, each at both ends exactly once; %d sessions for %d clients, %d resends",
		total, pairs, connects, 2*pairs, resends)
	testwait.For(t, 30*time.Second, "the PostgreSQL outbox drains (the relay publishes again)", func() bool {
		return c.outboxDepth(t) == 0
	})
	if connects <= 2*pairs {
		t.Errorf("got %d sessions for %d clients, want reconnects (the killed node's clients must move)", connects, 2*pairs)
	}
}

// outboxDepth is the PostgreSQL outbox's row count, from node 1's
// /api/admin/outbox (the cluster names chatload-admin an admin).
func (c *localCluster) outboxDepth(t *testing.T) int64 {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, c.url(1)+"/api/admin/outbox", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+apitest.Token(t, []byte(testSecret), "chatload-admin", ""))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("outbox view: %v", err)
	}
	defer resp.Body.Close()
	var v struct {
		Depth *int64 `json:"postgres_outbox_depth"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil || resp.StatusCode != http.StatusOK || v.Depth == nil {
		t.Fatalf("outbox view: status %d, %v", resp.StatusCode, err)
	}
	return *v.Depth
}

// others is every node but i, in order after i: where a client of node i
// goes when its session ends.
func (c *localCluster) others(i int) []string {
	return []string{c.url(i%3 + 1), c.url((i+1)%3 + 1)}
}

// sendPaced sends from p to chat perSec times a second until stop, each
// send under its own cid and retried with that cid until it is answered,
// so that every send's outcome is known (an accepted message is never
// counted as unsent). It returns what was accepted.
func sendPaced(t *testing.T, p *peer, chat, prefix string, perSec int, stop <-chan struct{}, n *atomic.Int64) []client.Accepted {
	tick := time.NewTicker(time.Second / time.Duration(perSec))
	defer tick.Stop()
	var accs []client.Accepted
	for i := 0; ; i++ {
		select {
		case <-stop:
			return accs
		case <-tick.C:
		}
		cid := fmt.Sprintf("%s-%d", prefix, i)
		deadline := time.Now().Add(60 * time.Second)
		for {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			acc, err := p.c.SendCID(ctx, chat, cid, cid)
			cancel()
			if err == nil {
				accs = append(accs, acc)
				n.Add(1)
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("send %s: no answer within 60s: %v", cid, err)
				return accs
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}
