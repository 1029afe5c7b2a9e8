package stream

import (
	"context"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/chatd/chatd/embedded"
	"github.com/chatd/chatd/internal/rusage"
	"github.com/chatd/chatd/internal/testnats"
)

// BenchmarkBrokerFloor is the least CPU a message can cost on its way
// through the embedded JetStream as chatd uses it: the relay's publish and
// its ack, the stream's file store, one durable pull consumer's delivery and
// its explicit ack. Nothing of chatd's own (no envelope, no registry, no
// PostgreSQL) runs. Publishing is not paced, so rounds are full and the
// server writes many deliveries at once: a floor, cheaper than the same
// work at a steady rate. cpu-µs/msg is the process's user and system time
// (server and client together) over the loop, per message; it is what
// chatd's "CPU per accepted message" pays for its broker at the least.
// conn=tcp connects over loopback TCP instead of chatd's in-process pipe.
func BenchmarkBrokerFloor(b *testing.B) {
	for _, tcp := range []bool{false, true} {
		conn := map[bool]string{false: "pipe", true: "tcp"}[tcp]
		for _, round := range []int{25, 256} {
			name := "conn=" + conn + "/round=" + strconv.Itoa(round)
			b.Run(name+"/publish", func(b *testing.B) {
				benchBrokerFloor(b, floorJetStream(b, tcp), round, false)
			})
			b.Run(name+"/publish+consume+ack", func(b *testing.B) {
				benchBrokerFloor(b, floorJetStream(b, tcp), round, true)
			})
		}
	}
}

// floorJetStream is a private embedded server's JetStream, reached in
// process as chatd does, or over a loopback TCP listener.
func floorJetStream(b *testing.B, tcp bool) jetstream.JetStream {
	if !tcp {
		return testnats.JetStream(b)
	}
	n, err := embedded.StartNATS(embedded.NATSConfig{StoreDir: b.TempDir(), Listen: "127.0.0.1:0"})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(n.Shutdown)
	nc, err := nats.Connect(n.ClientURL())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		b.Fatal(err)
	}
	return js
}

func benchBrokerFloor(b *testing.B, js jetstream.JetStream, round int, consume bool) {
	ctx := context.Background()
	if _, err := Ensure(ctx, js, Config{}); err != nil {
		b.Fatal(err)
	}
	var acked atomic.Int64
	if consume {
		cons, err := js.CreateOrUpdateConsumer(ctx, DefaultName, jetstream.ConsumerConfig{
			Durable: "floor", AckPolicy: jetstream.AckExplicitPolicy, AckWait: 10 * time.Second, MaxDeliver: 4,
		})
		if err != nil {
			b.Fatal(err)
		}
		cc, err := cons.Consume(func(m jetstream.Msg) {
			if err := m.Ack(); err == nil {
				acked.Add(1)
			}
		})
		if err != nil {
			b.Fatal(err)
		}
		defer cc.Stop()
	}
	p := newPublisher(js.Conn())
	defer p.close()
	// About the size of a pairs envelope on the wire.
	data := []byte(`{"outbox_id":1,"message":{"id":"01JF0000000000000000000000","cid":"c1","chat":"chat-1","from":"u1","body":"` +
		strings.Repeat("x", 64) + `","seq":1,"ts":"2026-12-03T00:00:00Z"},"recipients":["u2"]}`)
	id := 0
	cpu0 := rusage.SelfCPUSeconds()
	chat := func(id int) string { return SubjectPrefix + "chat-" + strconv.Itoa(id%300) }
	for b.Loop() {
		publishRound(b, p, round, &id, chat, data)
	}
	if consume {
		deadline := time.Now().Add(30 * time.Second)
		for acked.Load() < int64(id) {
			if time.Now().After(deadline) {
				b.Fatalf("consumer acked %d of %d messages in 30s", acked.Load(), id)
			}
			time.Sleep(time.Millisecond)
		}
	}
	b.ReportMetric((rusage.SelfCPUSeconds()-cpu0)*1e6/float64(id), "cpu-µs/msg")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(id), "ns/msg")
}
