package main

import (
	"strconv"
	"testing"
	"time"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/pkg/client"
)

// BenchmarkRecordSend is chatload's own bookkeeping of one message in
// pairs: the send recorded and its cid made, the answer recorded, and the
// delivery checked against it at the recipient (latencies included).
func BenchmarkRecordSend(b *testing.B) {
	cfg := Config{Scenario: scenarioPairs, Clients: 100, Rate: 1, Duration: time.Second}
	if err := cfg.setDefaults(); err != nil {
		b.Fatal(err)
	}
	const runID = "bench"
	p := newPlan(&cfg, runID)
	for ci := range p.chats {
		id := "chat_" + strconv.Itoa(ci)
		p.chats[ci].id = id
		p.chatIdx[id] = int32(ci)
	}
	rec := newRecorder(p, runID, time.Now())
	b.ReportAllocs()
	var i int64
	for b.Loop() {
		sender, chat := p.pick(i)
		i++
		n, cid := rec.begin(sender, chat)
		ch := &p.chats[chat]
		acc := client.Accepted{Chat: ch.id, CID: cid, ID: "01HZX6Q8ZK5J0Y3W2V1T0S9R8Q", Seq: i, TS: time.Now()}
		rec.finish(sender, n, acc, nil)
		for _, m := range ch.members {
			if m != sender {
				rec.deliver(m, chatd.Message{ID: acc.ID, CID: cid, Chat: ch.id, Seq: acc.Seq}, client.ViaLive, time.Now())
			}
		}
	}
	if got := rec.mismatch.Load() + rec.foreign.Load() + rec.dupApp.Load(); got != 0 {
		b.Fatalf("got %d mismatched, foreign or duplicate deliveries, want 0", got)
	}
}
