package e2e_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/internal/testwait"
	"github.com/chatd/chatd/pkg/api/apitest"
	"github.com/chatd/chatd/pkg/webhook"
)

// The dead-letter commands docs/integrations.md shows ("Dead letters and
// replay") work as written against a real chatd whose endpoint refused
// every event once: the list names them, the replay of one takes it off,
// and the replay of many, for the endpoint, takes the rest and says none
// is left. Each block's curl lines run by bash with the token, the address,
// the endpoint and the dead letter's id put in, and curl told to fail on an
// HTTP error.
func TestDocsDeadLetterCommands(t *testing.T) {
	var refuse atomic.Bool
	refuse.Store(true)
	var got atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if refuse.Load() {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		got.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	p := &chatdProc{bin: mustBuildChatd(t), dataDir: mustDataDir(t), addr: freeAddr(t),
		args: []string{"--webhook", srv.URL, "--webhook-secret", secret, "--webhook-max-attempts", "1", "--admin-users", "ops"}}
	p.start(t)
	t.Cleanup(func() { p.terminate(t) })
	testwait.For(t, 15*time.Second, "chatd delivers to the webhook", func() bool {
		return hookMetric(p.addr, "chatd_webhook_delivering", srv.URL) == 1
	})
	url := "http://" + p.addr
	tok := apitest.Token(t, []byte(testSecret), "alice", chatd.DefaultDevice)
	var chat struct{ ID string }
	apitest.PostJSON(t, url+"/api/chats/direct", tok, `{"user":"bob"}`, &chat)
	const sent = 3
	for i := range sent {
		apitest.PostJSON(t, url+"/api/chats/"+chat.ID+"/messages", tok, fmt.Sprintf(`{"cid":"d%d","body":"refused"}`, i), nil)
	}
	endpoint := webhook.ConsumerName(srv.URL)
	testwait.For(t, 20*time.Second, "the three messages set aside", func() bool {
		return hookMetric(p.addr, "chatd_webhook_dead_lettered_total", srv.URL) == sent
	})
	refuse.Store(false)

	text, err := os.ReadFile("../docs/integrations.md")
	if err != nil {
		t.Fatal(err)
	}
	section := string(text)[strings.Index(string(text), "## Dead letters and replay"):]
	section = section[:strings.Index(section[3:], "\n## ")+3]
	blocks := strings.Split(section, "```sh\n")[1:]
	if len(blocks) != 2 {
		t.Fatalf("%d sh blocks under \"Dead letters and replay\", want the list-and-replay one and the replay of many", len(blocks))
	}
	env := append(os.Environ(), "ADMIN_TOKEN="+apitest.Token(t, []byte(testSecret), "ops", chatd.DefaultDevice))
	run := func(line string) string {
		t.Helper()
		cmd := exec.Command("bash", "-euo", "pipefail", "-c", line)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s\nfailed: %v\n%s\nchatd's log:\n%s", line, err, out, p.out.String())
		}
		return string(out)
	}
	var curls [][]string // each block's curl lines, comments dropped
	for _, b := range blocks {
		b, _, _ = strings.Cut(b, "```")
		var lines []string
		for _, l := range strings.Split(strings.TrimSpace(b), "\n") {
			if strings.HasPrefix(l, "curl ") {
				lines = append(lines, strings.NewReplacer("curl ", "curl -sSf ", "http://localhost:8080", url).Replace(l))
			}
		}
		curls = append(curls, lines)
	}
	if len(curls[0]) != 2 || len(curls[1]) != 1 {
		t.Fatalf("curl lines per block %d and %d, want 2 (list, replay one) and 1 (replay many)", len(curls[0]), len(curls[1]))
	}

	list := func() []chatd.WebhookFailure {
		var page struct {
			Failed []chatd.WebhookFailure `json:"failed"`
		}
		out := run(curls[0][0])
		if err := json.Unmarshal([]byte(out), &page); err != nil {
			t.Fatalf("the documented list answered %q: %v", out, err)
		}
		return page.Failed
	}
	// The messages' endpoint; member changes, if any were set aside, have
	// an endpoint of their own (hook-…-changes).
	var mine []chatd.WebhookFailure
	before := list()
	for _, f := range before {
		if f.Endpoint == endpoint {
			mine = append(mine, f)
		}
	}
	if len(mine) != sent {
		t.Fatalf("the documented list names %d dead letters of %s, want the %d messages (all: %+v)", len(mine), endpoint, sent, before)
	}
	run(strings.Replace(curls[0][1], "/failed/7/replay", fmt.Sprintf("/failed/%d/replay", mine[0].ID), 1))
	if after := list(); len(after) != len(before)-1 || after[0].ID == mine[0].ID {
		t.Fatalf("after the documented replay of %d: %d dead letters, want %d without it", mine[0].ID, len(after), len(before)-1)
	}
	many := strings.Replace(curls[1][0], "endpoint=hook-3a6db8f9555b", "endpoint="+endpoint, 1)
	var rep chatd.WebhookReplay
	if out := run(many); json.Unmarshal([]byte(out), &rep) != nil || rep.Replayed != sent-1 || rep.Left != 0 || len(rep.Stopped) != 0 {
		t.Fatalf("the documented replay of many answered %q, want %d replayed, none left, none stopped", out, sent-1)
	}
	if n := got.Load(); n < sent {
		t.Fatalf("the endpoint took %d posts, want at least the %d replayed", n, sent)
	}
}
