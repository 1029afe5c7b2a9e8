package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/chatd/chatd/internal/testpg"
	"github.com/chatd/chatd/pkg/api"
	"github.com/chatd/chatd/pkg/client"
	"github.com/chatd/chatd/pkg/node"
	"github.com/chatd/chatd/pkg/node/nodetest"
)

func TestMain(m *testing.M) { testpg.Main(m) }

const secret = "bot-test-secret-of-32-characters"

func token(t *testing.T, user string) string {
	t.Helper()
	tok, err := api.IssueToken([]byte(secret), user, "bot", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// serviceToken is the bot's: a service identity (docs/bots.md).
func serviceToken(t *testing.T, name string) string {
	t.Helper()
	tok, err := api.IssueServiceToken([]byte(secret), name, "bot", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// The bot answers what it has not answered, once, across a restart: what
// came while it was down is answered when it is back, and nothing before.
func TestBotResumesWithoutReplayingHistory(t *testing.T) {
	ns := nodetest.NATS(t, t.TempDir(), "127.0.0.1:0")
	n := nodetest.Run(t, node.Config{DatabaseURL: testpg.NewDatabase(t), NATSURL: ns.ClientURL(), JWTSecret: secret, NodeID: "n1"}).Node
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	alice, err := client.New(client.Config{URL: n.URL(), Token: token(t, "alice")})
	if err != nil {
		t.Fatal(err)
	}
	chat, err := alice.Direct(ctx, "echobot")
	if err != nil {
		t.Fatal(err)
	}
	posted := 0
	post := func(body string) {
		t.Helper()
		posted++
		if _, err := alice.PostMessage(ctx, chat.ID, fmt.Sprintf("c%d", posted), body); err != nil {
			t.Fatalf("post %q: %v", body, err)
		}
	}
	// echoes returns the bodies of the bot's answers in the chat, in order.
	echoes := func() []string {
		page, err := alice.History(ctx, chat.ID, 0, 100)
		if err != nil {
			t.Fatalf("history: %v", err)
		}
		var out []string
		for _, m := range page.Messages {
			if m.From == "echobot" {
				out = append(out, m.Body)
			}
		}
		return out
	}
	waitEchoes := func(want ...string) {
		t.Helper()
		deadline := time.Now().Add(15 * time.Second)
		for {
			got := echoes()
			if fmt.Sprint(got) == fmt.Sprint(want) {
				return
			}
			if len(got) > len(want) || time.Now().After(deadline) {
				t.Fatalf("the bot answered %q, want %q", got, want)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	start := func() (stop func()) {
		bctx, bcancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		log := slog.New(slog.NewTextHandler(io.Discard, nil))
		go func() {
			done <- run(bctx, client.Config{URL: n.URL(), Token: serviceToken(t, "echobot"), Logger: log}, log)
		}()
		return func() {
			bcancel()
			if err := <-done; err != nil {
				t.Errorf("bot: %v", err)
			}
		}
	}

	post("before the bot ever ran") // answered: the bot has read nothing yet
	stop := start()
	waitEchoes("echo: before the bot ever ran")
	post("one")
	waitEchoes("echo: before the bot ever ran", "echo: one")
	// The read position of the last answer is committed in a group commit
	// shortly after the receipt: wait until it is, then stop the bot.
	waitRead(ctx, t, n, chat.ID, 3)
	stop()
	post("while down")
	stop = start()
	defer stop()
	waitEchoes("echo: before the bot ever ran", "echo: one", "echo: while down")
	// Nothing else comes: the bot's own reads of history did not answer again.
	time.Sleep(500 * time.Millisecond)
	waitEchoes("echo: before the bot ever ran", "echo: one", "echo: while down")
}

// waitRead waits until echobot's read position in chat reaches seq.
func waitRead(ctx context.Context, t *testing.T, n *node.Node, chat string, seq int64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var got int64
		err := n.Store.Pool().QueryRow(ctx, "SELECT upto_seq FROM read_state WHERE user_id = 'echobot' AND chat_id = $1", chat).Scan(&got)
		if err == nil && got >= seq {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("echobot's read position in %s: seq %d (%v), want %d", chat, got, err, seq)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
