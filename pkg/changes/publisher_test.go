package changes_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/internal/testnats"
	"github.com/chatd/chatd/internal/testpg"
	"github.com/chatd/chatd/internal/testwait"
	"github.com/chatd/chatd/pkg/changes"
	"github.com/chatd/chatd/pkg/store"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/oklog/ulid/v2"
)

func TestMain(m *testing.M) { testpg.Main(m) }

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// lockingStore is the store as the publisher sees it.
type lockingStore struct{ *store.Store }

func (s lockingStore) TryLock(ctx context.Context, name string) (changes.Lock, bool, error) {
	l, ok, err := s.TryWebhookLock(ctx, name)
	if !ok {
		return nil, false, err
	}
	return l, true, nil
}

// TestEveryChangeOnceInOrderAcrossALeaderLoss records member changes and
// reads in several chats while two publishers (two nodes) run on a 3-server
// NATS cluster, and stops the changes stream's leader and another server
// for a while (no quorum: publishes fail) midway: the stream
// ends with every change exactly once, each chat's in id order, and the
// table empty.
func TestEveryChangeOnceInOrderAcrossALeaderLoss(t *testing.T) {
	ctx := context.Background()
	cl := testnats.StartCluster(t, 3)
	js := cl.JetStream(t)
	st, err := store.Open(ctx, testpg.NewDatabase(t), store.Config{Logger: quiet, RecordMembers: true, RecordReads: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)

	const streamName = "CHANGES_TEST"
	var pubs []*changes.Publisher
	for range 2 {
		p, err := changes.New(changes.Config{JS: js, Stream: streamName, SubjectPrefix: "test.changes.", Replicas: 3,
			Store: lockingStore{st}, Standby: 200 * time.Millisecond, Poll: 20 * time.Millisecond, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		pubs = append(pubs, p)
	}
	if err := pubs[0].EnsureStream(ctx); err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for _, p := range pubs {
		wg.Add(1)
		go func() { defer wg.Done(); p.Run(runCtx) }() //nolint:errcheck // Run returns nil
	}
	t.Cleanup(func() { stop(); wg.Wait() })

	// Four chats, each with members coming and going and a member reading.
	var chats []chatd.Chat
	for i := range 4 {
		c, err := st.CreateGroupChat(ctx, "owner", fmt.Sprintf("chat %d", i), []string{"reader"})
		if err != nil {
			t.Fatal(err)
		}
		chats = append(chats, c)
	}
	const rounds, burst = 30, 200
	var down []int
	for r := range rounds {
		switch r {
		case rounds / 3: // the leader and another: no quorum, publishes fail
			// A burst first, so that publishes are in flight when the
			// servers go: their acks never come.
			for i := range burst {
				c := chats[i%len(chats)]
				if _, err := st.AddMember(ctx, c.ID, "owner", fmt.Sprintf("b%d", i)); err != nil {
					t.Fatal(err)
				}
			}
			lead := cl.StreamLeader(streamName)
			down = []int{lead, (lead + 1) % 3}
			cl.Stop(down[0])
			cl.Stop(down[1])
		case 2 * rounds / 3:
			time.Sleep(time.Second) // the publisher meets the outage
			for _, i := range down {
				cl.Restart(t, i)
			}
		}
		for _, c := range chats {
			user := fmt.Sprintf("u%d", r)
			if _, err := st.AddMember(ctx, c.ID, "owner", user); err != nil {
				t.Fatal(err)
			}
			if err := st.RemoveMember(ctx, c.ID, "owner", user); err != nil {
				t.Fatal(err)
			}
			out, err := st.CommitBatch(ctx, []store.Send{{ID: ulid.Make().String(), TS: time.Now(),
				SendRequest: chatd.SendRequest{Chat: c.ID, From: "owner", Device: "d", CID: fmt.Sprintf("%s-%d", c.ID, r), Body: "hi"}}})
			if err != nil || out[0].Err != nil {
				t.Fatalf("commit: %v %+v", err, out)
			}
			if _, err := st.MarkRead(ctx, "reader", c.ID, out[0].Message.ID); err != nil {
				t.Fatal(err)
			}
		}
	}
	want := len(chats)*(1+3*rounds) + burst

	// Said on a timeout: how far it got.
	var s jetstream.Stream
	var left, inStream int
	var lastErr error
	published := func() bool {
		rows, err := st.ReadChanges(ctx, want)
		if err != nil {
			lastErr = err
			return false
		}
		left = len(rows)
		if s, err = js.Stream(ctx, streamName); err != nil {
			lastErr = err
			return false
		}
		info, err := s.Info(ctx)
		if err != nil {
			lastErr = err
			return false
		}
		inStream = int(info.State.Msgs)
		return left == 0 && inStream >= want
	}
	for deadline := time.Now().Add(60 * time.Second); !published(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d changes not all in the stream within 60 s: %d left in the table, %d in the stream, last error %v",
				want, left, inStream, lastErr)
		}
	}
	seen := map[int64]bool{}
	last := map[string]int64{}
	for seq := uint64(1); seq <= uint64(want); seq++ {
		var m *jetstream.RawStreamMsg
		testwait.For(t, 10*time.Second, fmt.Sprintf("stream message %d", seq), func() bool {
			m, err = s.GetMsg(ctx, seq)
			return err == nil
		})
		var c chatd.ChatChange
		if err := json.Unmarshal(m.Data, &c); err != nil {
			t.Fatal(err)
		}
		if seen[c.ID] {
			t.Errorf("change %d twice in the stream", c.ID)
		}
		seen[c.ID] = true
		if c.ID <= last[c.Chat] {
			t.Errorf("chat %s: change %d after %d", c.Chat, c.ID, last[c.Chat])
		}
		last[c.Chat] = c.ID
	}
	if info, _ := s.Info(ctx); info.State.Msgs != uint64(want) {
		t.Errorf("the stream holds %d changes, want %d", info.State.Msgs, want)
	}
}
