package e2e_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chatd/chatd/internal/testpg"
	"github.com/chatd/chatd/internal/testproxy"
	"github.com/chatd/chatd/pkg/api/apitest"
	"github.com/chatd/chatd/pkg/client"
	"github.com/chatd/chatd/pkg/node"
)

// presenceEntry is one user's entry in GET /api/presence.
type presenceEntry struct {
	Online   bool       `json:"online"`
	LastSeen *time.Time `json:"last_seen"`
}

// getPresence calls GET /api/presence?users=… as user on the node at base
// and returns the status and the decoded presence map.
func getPresence(t *testing.T, base, user string, users ...string) (int, map[string]presenceEntry) {
	t.Helper()
	req, err := http.NewRequest("GET", base+"/api/presence?users="+url.QueryEscape(strings.Join(users, ",")), nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+apitest.Token(t, []byte(testSecret), user, ""))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Presence map[string]presenceEntry `json:"presence"`
	}
	if resp.StatusCode == 200 {
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
			t.Fatal(err)
		}
	}
	return resp.StatusCode, body.Presence
}

// presenceOf matches a presence event of user in the given state.
func presenceOf(user string, online bool) func(client.Event) bool {
	return func(ev client.Event) bool {
		return ev.Kind == client.EventPresence && ev.Presence.User == user && ev.Presence.Online == online
	}
}

// Presence is cluster-wide: bob connecting on node b reaches alice on node
// a as online within 2 s, and his last device leaving as offline with
// last_seen; GET /api/presence on either node agrees, answers a
// never-seen user {"online":false} and refuses more than 100 users.
func TestPresenceAcrossNodes(t *testing.T) {
	a, b := twoNodes(t)
	alice := mustSigPeer(t, a.URL(), "alice", "")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := alice.c.Direct(ctx, "bob"); err != nil {
		t.Fatal(err)
	}
	bobPhone := newClient(t, b.URL(), "bob", "phone", nil)
	bobLaptop := newClient(t, b.URL(), "bob", "laptop", nil)
	phone, laptop := runPeer(t, bobPhone), runPeer(t, bobLaptop)
	alice.waitFor(t, 2*time.Second, "alice sees bob online", presenceOf("bob", true))

	status, p := getPresence(t, a.URL(), "alice", "bob", "nobody")
	if status != 200 || !p["bob"].Online || p["nobody"].Online || p["nobody"].LastSeen != nil {
		t.Errorf("presence on a: got %d %+v, want bob online and nobody {online:false}", status, p)
	}

	// One of bob's two devices leaving changes nothing; the last one does.
	if err := phone.stop(t); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	if _, ok := alice.find(presenceOf("bob", false)); ok {
		t.Fatal("bob went offline while his laptop was still connected")
	}
	left := time.Now()
	if err := laptop.stop(t); err != nil {
		t.Fatal(err)
	}
	ev := alice.waitFor(t, 2*time.Second, "alice sees bob offline", presenceOf("bob", false))
	if d := ev.Presence.LastSeen.Sub(left); d < -time.Second || d > 2*time.Second {
		t.Errorf("last_seen %v is %v from the disconnect, want about it", ev.Presence.LastSeen, d)
	}
	for _, base := range []string{a.URL(), b.URL()} {
		status, p := getPresence(t, base, "alice", "bob")
		if status != 200 || p["bob"].Online || p["bob"].LastSeen == nil {
			t.Errorf("presence on %s: got %d %+v, want bob offline with last_seen", base, status, p)
		}
	}

	users := make([]string, 101)
	for i := range users {
		users[i] = "u" + string(rune('a'+i%26)) + string(rune('a'+i/26))
	}
	if status, _ := getPresence(t, a.URL(), "alice", users...); status != 400 {
		t.Errorf("101 users: got status %d, want 400", status)
	}
	if status, _ := getPresence(t, a.URL(), "alice", users[:100]...); status != 200 {
		t.Errorf("100 users: got status %d, want 200", status)
	}
}

// A node cut off from NATS without a goodbye (no clean shutdown, no delete
// of its entries): its users go offline for the rest of the cluster within
// 10 s, when its heartbeat in the bucket stops being refreshed; back on
// NATS, it brings them back.
func TestPresenceNodeCutOff(t *testing.T) {
	dsn := testpg.NewDatabase(t)
	ns := mustNATS(t, t.TempDir(), "127.0.0.1:0")
	nu, err := url.Parse(ns.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	proxy := testproxy.Start(t, nu.Host)
	a := mustRunNode(t, nodeConfig(dsn, ns.ClientURL(), "a", node.Config{}))
	b := mustRunNode(t, nodeConfig(dsn, proxy.URL("nats"), "b", node.Config{}))
	// Cleanups run last-registered first: reconnect b before the nodes stop.
	t.Cleanup(proxy.Restore)

	alice := mustSigPeer(t, a.URL(), "alice", "")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := alice.c.Direct(ctx, "bob"); err != nil {
		t.Fatal(err)
	}
	mustSigPeer(t, b.URL(), "bob", "")
	alice.waitFor(t, 2*time.Second, "alice sees bob online", presenceOf("bob", true))

	proxy.Cut()
	alice.waitFor(t, 10*time.Second, "alice sees bob offline after node b was cut off", presenceOf("bob", false))
	if status, p := getPresence(t, a.URL(), "alice", "bob"); status != 200 || p["bob"].Online || p["bob"].LastSeen == nil {
		t.Errorf("presence on a: got %d %+v, want bob offline with last_seen", status, p)
	}

	// Node a has deleted b's entries meanwhile (b looked dead); b back on
	// NATS puts bob's back, and he is online again for alice.
	proxy.Restore()
	alice.waitFor(t, 10*time.Second, "alice sees bob online after node b came back", presenceOf("bob", true))
}

// last_seen outlives the nodes that saw it: bob leaves while only node a
// runs, and a node started afterwards (it never saw bob) answers his
// last_seen from PostgreSQL, equal to what alice was told.
func TestLastSeenReachesANodeStartedLater(t *testing.T) {
	dsn := testpg.NewDatabase(t)
	ns := mustNATS(t, t.TempDir(), "127.0.0.1:0")
	a := mustRunNode(t, nodeConfig(dsn, ns.ClientURL(), "a", node.Config{}))
	alice := mustSigPeer(t, a.URL(), "alice", "")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := alice.c.Direct(ctx, "bob"); err != nil {
		t.Fatal(err)
	}
	bob := runPeer(t, newClient(t, a.URL(), "bob", "", nil))
	alice.waitFor(t, 2*time.Second, "alice sees bob online", presenceOf("bob", true))
	if err := bob.stop(t); err != nil {
		t.Fatal(err)
	}
	ev := alice.waitFor(t, 2*time.Second, "alice sees bob offline", presenceOf("bob", false))

	later := mustRunNode(t, nodeConfig(dsn, ns.ClientURL(), "later", node.Config{}))
	deadline := time.Now().Add(3 * time.Second) // the record is written after the frame goes out
	for {
		status, p := getPresence(t, later.URL(), "alice", "bob")
		if status == 200 && !p["bob"].Online && p["bob"].LastSeen != nil {
			if d := p["bob"].LastSeen.Sub(ev.Presence.LastSeen); d < -time.Millisecond || d > time.Millisecond {
				t.Errorf("last_seen on the later node %v, alice was told %v", p["bob"].LastSeen, ev.Presence.LastSeen)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("presence on the later node: got %d %+v, want bob offline with last_seen", status, p)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
