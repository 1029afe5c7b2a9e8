package e2e_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/chatd/chatd/internal/testwait"
	"github.com/chatd/chatd/pkg/client"
)

// chatd SIGKILLed while posting to a slow webhook endpoint and restarted on
// the same data dir: every accepted message reaches the endpoint with a
// valid Standard Webhooks signature, first copies arrive in each chat's seq
// order, and a repeat carries the webhook-id of its first copy. The member
// changes made before the kill arrive the same way, in each chat's order.
func TestWebhookSurvivesSIGKILL(t *testing.T) {
	start := time.Now()
	recv, secret := newHookReceiver(t, 30*time.Millisecond)
	srv := httptest.NewServer(recv)
	t.Cleanup(srv.Close)

	p := &chatdProc{bin: mustBuildChatd(t), dataDir: mustDataDir(t), addr: freeAddr(t),
		args: []string{"--webhook", srv.URL, "--webhook-secret", secret}}
	p.start(t)
	t.Cleanup(func() { p.terminate(t) })
	// The endpoint receives what is accepted once its consumer exists.
	testwait.For(t, 15*time.Second, "chatd delivers to the webhook", func() bool {
		return hookMetric(p.addr, "chatd_webhook_delivering", srv.URL) == 1
	})
	url := "http://" + p.addr

	alice := mustPeer(t, url, "alice", "", nil)
	chats := []string{alice.mustDirect(t, "bob"), alice.mustDirect(t, "carol"), alice.mustDirect(t, "dave")}
	// Member changes queue up behind the endpoint too: a group created,
	// then members added and removed, each a chat.member change.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	group, err := alice.c.CreateGroup(ctx, "kill", []string{"bob"})
	if err != nil {
		t.Fatal(err)
	}
	const memberChanges = 30
	for i := range memberChanges / 2 {
		user := fmt.Sprintf("guest%d", i)
		if _, err := alice.c.AddMember(ctx, group.ID, user); err != nil {
			t.Fatal(err)
		}
		if err := alice.c.RemoveMember(ctx, group.ID, user); err != nil {
			t.Fatal(err)
		}
	}
	const changes = 3 + 1 + memberChanges // the direct chats', the group's, its members'

	// One sender per chat; the receiver takes each event 30 ms, so the
	// endpoint lags the senders and posts are in flight when chatd dies.
	const each = 20
	const total = each * 3
	sent := make([][]client.Accepted, len(chats))
	var wg sync.WaitGroup
	for i, chat := range chats {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sent[i] = alice.sendN(t, chat, fmt.Sprintf("c%d", i), each, 5*time.Millisecond)
		}()
	}
	testwait.For(t, 15*time.Second, "the first events reach the endpoint", func() bool { return recv.distinct(t) >= 12 })
	p.kill(t)
	_, inFlight := recv.snapshot()
	distinctAtKill := recv.distinct(t)
	changesAtKill := len(recv.changesSeen())
	if distinctAtKill >= total {
		t.Fatalf("all %d events arrived before the kill; the test needs it to land mid-delivery", total)
	}

	pgDir := filepath.Join(p.dataDir, "pg")
	testwait.For(t, 10*time.Second, "no postgres outlives chatd", func() bool { return len(processesMentioning(pgDir)) == 0 })
	killed := time.Now()
	p.start(t)
	restarted := time.Now()
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
	testwait.For(t, 20*time.Second, "every accepted message reaches the endpoint", func() bool { return recv.distinct(t) >= total })
	caughtUp := time.Since(restarted)

	testwait.For(t, 20*time.Second, "every member change reaches the endpoint", func() bool {
		seen := map[int64]bool{}
		for _, c := range recv.changesSeen() {
			seen[c.change] = true
		}
		return len(seen) >= changes
	})
	changeDups := checkChanges(t, recv.changesSeen(), changes)
	t.Logf("%d member changes, %d had arrived at the kill, %d repeats", changes, changesAtKill, changeDups)

	copies, _ := recv.snapshot()
	firstID, dups := checkHookCopies(t, copies, accepted)
	t.Logf("%d events, %d copies received, %d duplicates (same webhook-id); at the kill %d events had arrived, %d posts in flight; %d resends by the sender; restart %v, then all delivered in %v; test %v",
		len(firstID), len(copies), dups, distinctAtKill, inFlight, alice.c.Stats().Resends,
		restarted.Sub(killed).Round(time.Millisecond), caughtUp.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
}
