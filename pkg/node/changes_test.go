package node_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/internal/testpg"
	"github.com/chatd/chatd/internal/testwait"
	"github.com/chatd/chatd/pkg/node"
	"github.com/chatd/chatd/pkg/node/nodetest"
	"github.com/chatd/chatd/pkg/webhook"
)

// changeSink records the member changes and reads an endpoint receives,
// checking each request's signature and id, and counts the other events.
type changeSink struct {
	t   *testing.T
	key []byte

	mu      sync.Mutex
	changes []webhook.ChangePayload
	ids     map[string]bool
	events  int
}

func (s *changeSink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id, body := readSigned(s.t, s.key, r)
	var p webhook.ChangePayload
	if err := json.Unmarshal(body, &p); err != nil {
		s.t.Errorf("request %s: %v", id, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if p.Type != "chat.member" && p.Type != "chat.read" {
		s.events++
		return
	}
	if !strings.HasPrefix(id, p.Data.Key()+"_") {
		s.t.Errorf("change %s came under webhook-id %s", p.Data.Key(), id)
	}
	if !s.ids[id] {
		s.ids[id] = true
		s.changes = append(s.changes, p)
	}
}

func (s *changeSink) got() ([]webhook.ChangePayload, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.changes), s.events
}

// An endpoint with the default kinds gets a group's member changes and a
// member's reads, in the order they happened, beside its messages; a read
// that does not move the position is no change.
func TestWebhookMemberAndReadChanges(t *testing.T) {
	key := testWhsecKey(t)
	sink := &changeSink{t: t, key: key, ids: map[string]bool{}}
	url := serveEndpoint(t, sink)
	cfg := node.Config{
		DataDir: filepath.Join(t.TempDir(), "data"), DatabaseURL: testpg.NewDatabase(t), JWTSecret: opsSecret, NodeID: "changes-1",
		Webhook: webhook.Config{Endpoints: []webhook.Endpoint{{URL: url, Secret: testWhsec}}},
	}
	n := nodetest.Run(t, cfg)
	base := n.URL()
	ws := "ws" + strings.TrimPrefix(base, "http") + "/ws"
	call := func(user, method, path string, body any, want int) map[string]any {
		t.Helper()
		st, out := restCall(t, http.DefaultClient, base, user, method, path, body)
		if st != want {
			t.Fatalf("%s %s: %d %v, want %d", method, path, st, out, want)
		}
		return out
	}
	chatID := call("alice", "POST", "/api/chats", map[string]any{"members": []string{"bob"}}, http.StatusCreated)["id"].(string)
	call("alice", "POST", "/api/chats/"+chatID+"/members", map[string]any{"user": "carol"}, http.StatusOK)
	var ids []string
	for i := range 3 {
		out := call("alice", "POST", "/api/chats/"+chatID+"/messages", map[string]any{"cid": fmt.Sprint("c", i), "body": "hi"}, http.StatusCreated)
		ids = append(ids, out["id"].(string))
	}
	// carol sees a receipt once each read is stored (reads of one
	// connection coalesce while one is being stored).
	bob, carol := mustWS(t, nil, ws, "bob"), mustWS(t, nil, ws, "carol")
	for _, r := range []struct {
		upto string
		seq  float64
	}{{ids[1], 2}, {ids[0], 2}, {ids[2], 3}} { // the second moves nothing
		bob.send(map[string]any{"type": "read", "chat": chatID, "upto": r.upto})
		carol.waitFor(5*time.Second, fmt.Sprintf("bob's receipt of seq %v", r.seq), func(f map[string]any) bool {
			return f["type"] == "receipt" && f["user"] == "bob" && f["seq"] == r.seq
		})
	}
	call("alice", "DELETE", "/api/chats/"+chatID+"/members/bob", nil, http.StatusNoContent)

	type want struct {
		typ, change, by string
		users           []string
		seq             int64
	}
	wants := []want{
		{"chat.member", chatd.ChangeCreated, "alice", []string{"alice", "bob"}, 0},
		{"chat.member", chatd.ChangeAdded, "alice", []string{"carol"}, 0},
		{"chat.read", "", "", []string{"bob"}, 2},
		{"chat.read", "", "", []string{"bob"}, 3},
		{"chat.member", chatd.ChangeRemoved, "alice", []string{"bob"}, 0},
	}
	testwait.Until(t, fmt.Sprintf("%d changes and 3 messages posted", len(wants)), func() bool {
		got, events := sink.got()
		return len(got) >= len(wants) && events >= 3
	})
	time.Sleep(500 * time.Millisecond) // a change too many would come by now
	got, _ := sink.got()
	if len(got) != len(wants) {
		t.Fatalf("%d changes, want %d: %+v", len(got), len(wants), got)
	}
	for i, p := range got {
		w, d := wants[i], p.Data
		if p.Type != w.typ || d.Change != w.change || d.By != w.by || !slices.Equal(d.Users, w.users) || d.Seq != w.seq || d.Chat != chatID {
			t.Errorf("change %d: %s %+v, want %s %+v in chat %s", i, p.Type, d, w.typ, w, chatID)
		}
		if i > 0 && d.ID <= got[i-1].Data.ID {
			t.Errorf("change %d: id %d after %d", i, d.ID, got[i-1].Data.ID)
		}
	}
	if got[2].Data.Upto != ids[1] || got[3].Data.Upto != ids[2] {
		t.Errorf("reads up to %s and %s, want %s and %s", got[2].Data.Upto, got[3].Data.Upto, ids[1], ids[2])
	}
}
