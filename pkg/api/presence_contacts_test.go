package api_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/internal/testnats"
	"github.com/chatd/chatd/internal/testwait"
	"github.com/chatd/chatd/pkg/api"
	"github.com/chatd/chatd/pkg/signal"
	"github.com/chatd/chatd/pkg/store"
	"github.com/nats-io/nats.go/jetstream"
)

// mustPresenceEnv is an env whose presence is the real component, on a
// real NATS and the env's store.
func mustPresenceEnv(t *testing.T) (*env, *signal.Presence) {
	t.Helper()
	nc := testnats.Connect(t, testnats.Start(t))
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	var srv atomic.Pointer[api.Server]
	var p *signal.Presence
	e := mustEnv(t, func(c *api.Config) {
		st := c.Chats.(*store.Store)
		c.REST.RatePerSecond, c.REST.Burst = 1000, 1000 // the test polls
		p, err = signal.NewPresence(signal.PresenceConfig{
			JS: js, NodeID: "test", Contacts: st.Contacts, ContactsAmong: st.ContactsAmong, LastSeen: st,
			Deliver: func(s chatd.Signal) {
				if srv := srv.Load(); srv != nil {
					srv.Signal(s)
				}
			},
			Logger: quietLogger(),
		})
		if err != nil {
			t.Fatal(err)
		}
		c.Presence = p
	})
	srv.Store(e.srv)
	mustRun(t, p.Run)
	return e, p
}

// restPresence is user's view of of's presence through GET /api/presence.
func (e *env) restPresence(t *testing.T, user, of string) map[string]any {
	t.Helper()
	body := e.mustCall(t, 200, user, "GET", "/api/presence?users="+of, nil)
	p, _ := body["presence"].(map[string]any)
	got, _ := p[of].(map[string]any)
	return got
}

// REST presence has the audience of live presence: users who share a chat
// with bob (of at most the audience's size) see him online and when he
// was last seen; anyone else gets what a never-seen user gets,
// {"online":false}, so presence cannot be polled for arbitrary user ids.
func TestRESTPresenceOnlyForContacts(t *testing.T) {
	e, p := mustPresenceEnv(t)
	if _, _, err := e.store.DirectChat(context.Background(), "alice", "bob"); err != nil {
		t.Fatal(err)
	}
	p.Connected("bob")
	testwait.For(t, 5*time.Second, "alice sees bob online", func() bool {
		return e.restPresence(t, "alice", "bob")["online"] == true
	})
	if got := e.restPresence(t, "mallory", "bob"); len(got) != 1 || got["online"] != false {
		t.Errorf("stranger while bob is online: got %v, want {online:false}", got)
	}
	if got := e.restPresence(t, "bob", "bob"); got["online"] != true {
		t.Errorf("bob of himself: got %v, want online", got)
	}

	p.Disconnected("bob")
	testwait.For(t, 5*time.Second, "alice sees bob's last_seen", func() bool {
		got := e.restPresence(t, "alice", "bob")
		return got["online"] == false && got["last_seen"] != nil
	})
	if got := e.restPresence(t, "mallory", "bob"); len(got) != 1 || got["online"] != false {
		t.Errorf("stranger after bob left: got %v, want {online:false} without last_seen", got)
	}
}
