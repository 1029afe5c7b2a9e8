package client_test

import (
	"context"
	"encoding/base64"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chatd/chatd/pkg/api"
	"github.com/chatd/chatd/pkg/client"
	"github.com/chatd/chatd/pkg/node"
)

func TestTokenExp(t *testing.T) {
	seg := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	tok, err := api.IssueToken([]byte(testSecret), "alice", "", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		tok  string
		want int64 // Unix seconds; 0: no exp
	}{
		{"number", "h." + seg(`{"sub":"a","exp":1767225600}`) + ".s", 1767225600},
		{"fraction", "h." + seg(`{"exp":1767225600.5}`) + ".s", 1767225600},
		{"padded payload", "h." + base64.URLEncoding.EncodeToString([]byte(`{"exp":17}`)) + ".s", 17},
		{"no exp", "h." + seg(`{"sub":"a"}`) + ".s", 0},
		{"exp a string", "h." + seg(`{"exp":"soon"}`) + ".s", 0},
		{"not base64", "h.!!!.s", 0},
		{"not JSON", "h." + seg(`exp`) + ".s", 0},
		{"two parts", "h." + seg(`{"exp":17}`), 0},
		{"opaque", "tok", 0},
	}
	for _, tt := range tests {
		got := client.TokenExp(tt.tok)
		if (tt.want == 0) != got.IsZero() || (tt.want != 0 && got.Unix() != tt.want) {
			t.Errorf("%s: got %v, want Unix %d", tt.name, got, tt.want)
		}
	}
	if d := time.Until(client.TokenExp(tok)); d <= 59*time.Minute || d > time.Hour {
		t.Errorf("issued token: exp in %v, want about an hour", d)
	}
}

// A client with a TokenFunc handing out two-second tokens refreshes them
// in-band and stays on its first connection well past the first token's
// exp; messages still arrive on it. Both refresh schedules are checked: the
// default share of the lifetime, and a lead longer than half of it.
func TestIntegrationClientRefreshesTokenInBand(t *testing.T) {
	tests := []struct {
		name string
		lead time.Duration
	}{
		{"default share of the lifetime", 0},
		{"refresh before exp", 1500 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			testClientRefresh(t, tt.lead)
		})
	}
}

func testClientRefresh(t *testing.T, lead time.Duration) {
	n := mustNode(t, node.Config{})
	var issued atomic.Int64
	alice := mustClient(t, n, "alice", "", func(c *client.Config) {
		c.RefreshBefore = lead
		c.TokenFunc = func(context.Context) (string, error) {
			issued.Add(1)
			return api.IssueToken([]byte(testSecret), "alice", "", 2*time.Second)
		}
	})
	chat := mustDirect(t, alice, "bob")
	alice.Track(chat)
	bob := mustClient(t, n, "bob", "", nil)
	ac := run(t, alice, false)
	run(t, bob, false)
	waitConnected(t, alice)

	// Every token alice dialed with has expired, a second of grace included.
	time.Sleep(3500 * time.Millisecond)
	sendN(t, bob, chat, "after exp", 1)
	ac.waitMessages(t, chat, 1, 5*time.Second)

	st := alice.Stats()
	if st.Connects != 1 || len(st.Disconnects) != 0 {
		t.Errorf("connects %d, disconnects %v; want one connection that never ended (stats %+v)", st.Connects, st.Disconnects, st)
	}
	// Tokens last 1-2 s (exp is whole seconds), each refreshed at the
	// latest halfway: 3.5 s take at least two, and a refresh loop would
	// show as dozens.
	if st.TokenRefreshes < 2 || st.TokenRefreshes > 10 {
		t.Errorf("token refreshes %d, want 2-10 (tokens issued %d)", st.TokenRefreshes, issued.Load())
	}
	if got := metricSum(t, n, "chatd_ws_token_expired_total"); got != 0 {
		t.Errorf("chatd_ws_token_expired_total = %v, want 0", got)
	}
	select {
	case err := <-ac.done:
		close(ac.done)
		t.Fatalf("Run returned %v while the token was being refreshed", err)
	default:
	}
}

// A fixed Token cannot be refreshed: at its exp the server closes with 4401
// and Run returns ErrUnauthorized, as for any refused token.
func TestIntegrationClientFixedTokenExpires(t *testing.T) {
	n := mustNode(t, node.Config{})
	tok, err := api.IssueToken([]byte(testSecret), "carol", "", 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	carol := mustClient(t, n, "carol", "", func(c *client.Config) { c.Token = tok })
	cc := run(t, carol, false)
	select {
	case err := <-cc.done:
		close(cc.done)
		if !errors.Is(err, client.ErrUnauthorized) {
			t.Fatalf("Run returned %v, want ErrUnauthorized", err)
		}
		if st := carol.Stats(); st.Disconnects[client.CloseUnauthorized] != 1 {
			t.Errorf("disconnects %v, want one 4401", st.Disconnects)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after the token expired")
	}
}
