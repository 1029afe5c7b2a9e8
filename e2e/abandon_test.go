package e2e_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chatd/chatd/internal/testpg"
	"github.com/chatd/chatd/pkg/api/apitest"
	"github.com/chatd/chatd/pkg/client"
	"github.com/chatd/chatd/pkg/node"
	"github.com/chatd/chatd/pkg/push"
	"github.com/fasthttp/websocket"
)

// rawMsg is the part of a server frame the raw client looks at.
type rawMsg struct {
	Type string `json:"type"`
	ID   string `json:"id"`
	Chat string `json:"chat"`
	Seq  int64  `json:"seq"`
}

// dialRaw opens a bare WebSocket for user and reads its hello. It speaks
// the protocol only as far as the test needs: it reads, and never acks.
func dialRaw(t *testing.T, rn *runningNode, user string) *websocket.Conn {
	t.Helper()
	h := http.Header{"Authorization": {"Bearer " + apitest.Token(t, []byte(testSecret), user, "")}}
	conn, _, err := websocket.DefaultDialer.Dial("ws://"+rn.Addr()+"/ws", h)
	if err != nil {
		t.Fatalf("dial %s: %v", user, err)
	}
	t.Cleanup(func() { conn.Close() })
	var hello rawMsg
	if err := conn.ReadJSON(&hello); err != nil || hello.Type != "hello" {
		t.Fatalf("first frame %+v, err %v; want hello", hello, err)
	}
	return conn
}

// readUntilClose reads msg frames of chat until the server closes the
// connection and returns the seqs seen and the close code.
func readUntilClose(t *testing.T, conn *websocket.Conn, chat string, within time.Duration) (map[int64]bool, int) {
	t.Helper()
	seqs := map[int64]bool{}
	if err := conn.SetReadDeadline(time.Now().Add(within)); err != nil {
		t.Fatal(err)
	}
	for {
		_, data, err := conn.ReadMessage()
		var ce *websocket.CloseError
		if errors.As(err, &ce) {
			return seqs, ce.Code
		}
		if err != nil {
			t.Fatalf("read until close: %v (seqs so far %v)", err, seqs)
		}
		var f rawMsg
		if err := json.Unmarshal(data, &f); err != nil {
			t.Fatalf("decode %q: %v", data, err)
		}
		if f.Type == "msg" && f.Chat == chat {
			seqs[f.Seq] = true
		}
	}
}

// docs/architecture.md, invariant 3 and G3: a recipient that reads but never
// acks is abandoned (4000) after MaxAttempts leases; it loses nothing, because
// the abandon only withdraws it from live delivery and never touches history:
// it reconnects, pulls history from its last contiguous seq and has every
// message.
func TestAbandonedClientRecoversEverythingFromHistory(t *testing.T) {
	ns := mustNATS(t, t.TempDir(), "127.0.0.1:0")
	rn := mustRunNode(t, nodeConfig(testpg.NewDatabase(t), ns.ClientURL(), "n1",
		node.Config{Push: push.Config{Lease: 500 * time.Millisecond, MaxAttempts: 2}}))
	abandonAndRecover(t, rn)
}

// abandonAndRecover runs the abandon above on rn: alice sends, bob reads
// and never acks until closed with 4000, then comes back and recovers.
func abandonAndRecover(t *testing.T, rn *runningNode) {
	t.Helper()
	alice := mustPeer(t, rn.URL(), "alice", "", nil)
	chat := alice.mustDirect(t, "bob")

	raw := dialRaw(t, rn, "bob")
	before := alice.sendN(t, chat, "before", 5, 0)
	seen, code := readUntilClose(t, raw, chat, 15*time.Second)
	if code != client.CloseAbandoned {
		t.Fatalf("a recipient that never acks was closed with %d, want %d", code, client.CloseAbandoned)
	}
	var contiguous int64
	for seen[contiguous+1] {
		contiguous++
	}
	if contiguous == 0 {
		t.Fatalf("the non-acking recipient got no message live before its abandon (seqs %v)", seen)
	}
	if got := rn.historyRows(t); got != int64(len(before)) {
		t.Fatalf("history holds %d rows after the abandon, want %d", got, len(before))
	}

	// More traffic while bob is away, then bob comes back with the SDK from
	// his last contiguous seq.
	away := alice.sendN(t, chat, "away", 5, 0)
	c := newClient(t, rn.URL(), "bob", "", nil)
	c.TrackFrom(chat, contiguous)
	bob := runPeer(t, c)
	bob.reconcile(t, chat, contiguous+1, idsAfter(contiguous, before, away), 10*time.Second)
	if got, want := rn.historyRows(t), int64(len(before)+len(away)); got != want {
		t.Fatalf("history holds %d rows, want %d", got, want)
	}
	if st := bob.c.Stats(); st.DeliveredHistory == 0 {
		t.Errorf("the returning client took nothing from history (stats %+v)", st)
	}
	// History is whole from seq 1, whatever the abandon did to live delivery.
	page, err := bob.c.History(t.Context(), chat, 0, 100)
	if err != nil {
		t.Fatalf("history: %v", err)
	}
	var ids []string
	for _, m := range page.Messages {
		ids = append(ids, m.ID)
	}
	if got, want := strings.Join(ids, ","), strings.Join(idsAfter(0, before, away), ","); got != want {
		t.Fatalf("history ids\n got %s\nwant %s", got, want)
	}
}
