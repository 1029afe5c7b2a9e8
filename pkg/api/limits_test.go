package api_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chatd/chatd/pkg/api"
	"github.com/chatd/chatd/pkg/codec"
	"github.com/chatd/chatd/pkg/ingest"
	"github.com/chatd/chatd/pkg/push"
	"github.com/chatd/chatd/pkg/store"
)

// withIngest swaps the env's ingest for one configured by edit, over the
// same store and push registry.
func withIngest(t *testing.T, edit func(*ingest.Config)) func(*api.Config) {
	return func(c *api.Config) {
		st, reg := c.Chats.(*store.Store), c.Delivery.(*push.Registry)
		cfg := ingest.Config{Store: st, Logger: quietLogger(),
			OnCommit: func(batch []store.Accepted) {
				for i := range batch {
					reg.FastPath(&batch[i].Message, batch[i].Recipients)
				}
			}}
		edit(&cfg)
		in, err := ingest.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		mustRun(t, in.Run)
		c.Ingest = in
	}
}

// withEnvelopeLimit makes the env's ingest check envelopes against limit.
func withEnvelopeLimit(t *testing.T, limit int) func(*api.Config) {
	return withIngest(t, func(c *ingest.Config) { c.MaxEnvelopeBytes = limit })
}

// withBodyLimit makes the env's ingest check bodies against limit (the one
// check of every path) and hello announce it, as the node sets them.
func withBodyLimit(t *testing.T, limit int) func(*api.Config) {
	swap := withIngest(t, func(c *ingest.Config) { c.MaxBodyBytes = limit })
	return func(c *api.Config) {
		swap(c)
		c.Limits.MaxBodyBytes = limit
	}
}

// A message whose stream envelope would exceed the limit
// (a long body of characters JSON escapes, in a group with many members) is
// REST 400 too_large and WebSocket `rejected too_large`; nothing is stored
// and no member gets anything. The same body fits a 2-member chat.
func TestSendOverTheEnvelopeLimit(t *testing.T) {
	// The default body limit (4096) exactly fits a 2-member chat's worst case.
	e := mustEnv(t, withEnvelopeLimit(t, codec.WorstCaseEnvelopeSize(4096, 2)))
	// 300 members with 60-byte ids: more than the room the worst case keeps
	// for meta (~12.3 KB), which these sends do not use.
	members := make([]string, 300)
	for i := range members {
		members[i] = fmt.Sprintf("%s-%03d", strings.Repeat("m", 56), i)
	}
	big := e.mustGroup(t, "alice", members...)
	small := e.mustGroup(t, "alice", "bob")
	body := strings.Repeat("<", 4096)

	e.wantError(t, 400, "too_large", "alice", "POST", "/api/chats/"+big+"/messages", map[string]any{"cid": "r1", "body": body})
	c, _ := e.dial(t, "alice", "")
	c.sendJSON(sendFrame(big, "w1", body))
	if r := c.nextOf("rejected"); r["code"] != "too_large" || r["cid"] != "w1" || !strings.Contains(r["error"].(string), "shorter body") {
		t.Errorf("WS: got %v, want rejected too_large with cid w1 saying what to do", r)
	}
	if msgs := e.history(t, "alice", big); len(msgs) != 0 {
		t.Errorf("big chat holds %d messages, want none", len(msgs))
	}
	e.mustCall(t, 201, "alice", "POST", "/api/chats/"+small+"/messages", map[string]any{"cid": "r2", "body": body})
	c.sendJSON(sendFrame(big, "w2", "short and plain"))
	if a := c.nextOf("accepted"); a["seq"] != 1.0 {
		t.Errorf("a plain send to the big chat: got %v, want accepted seq 1", a)
	}
}

// Group size is capped (default 1000) on creation and when adding.
func TestGroupSizeCap(t *testing.T) {
	e := mustEnv(t)
	many := make([]string, store.DefaultMaxGroupMembers)
	for i := range many {
		many[i] = fmt.Sprintf("u%d", i)
	}
	e.wantError(t, 400, "too_many_members", "alice", "POST", "/api/chats", map[string]any{"members": many, "title": "t"})
	full := e.mustGroup(t, "alice", many[1:]...) // 1000 with alice
	e.wantError(t, 400, "too_many_members", "alice", "POST", "/api/chats/"+full+"/members", map[string]any{"user": "bob"})
	e.mustCall(t, 204, "alice", "DELETE", "/api/chats/"+full+"/members/u1", nil)
	e.mustCall(t, 200, "alice", "POST", "/api/chats/"+full+"/members", map[string]any{"user": "bob"})
}
