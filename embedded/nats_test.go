package embedded_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chatd/chatd/embedded"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

func mustStartNATS(t *testing.T, cfg embedded.NATSConfig) *embedded.NATS {
	t.Helper()
	n, err := embedded.StartNATS(cfg)
	if err != nil {
		t.Fatalf("StartNATS: %v", err)
	}
	t.Cleanup(n.Shutdown)
	return n
}

func mustConnect(t *testing.T, n *embedded.NATS) *nats.Conn {
	t.Helper()
	nc, err := n.Connect()
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	t.Cleanup(nc.Close)
	return nc
}

func TestNATSJetStreamPersistsAcrossRestart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	store := t.TempDir()

	n := mustStartNATS(t, embedded.NATSConfig{StoreDir: store})
	if got := n.ClientURL(); got != "" {
		t.Fatalf("ClientURL without listener: got %q, want empty", got)
	}
	js, err := jetstream.New(mustConnect(t, n))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "T", Subjects: []string{"t.>"}, Storage: jetstream.FileStorage}); err != nil {
		t.Fatalf("CreateStream: %v", err)
	}
	if _, err := js.Publish(ctx, "t.a", []byte("hello")); err != nil {
		t.Fatalf("Publish: %v", err)
	}
	n.Shutdown()

	n2 := mustStartNATS(t, embedded.NATSConfig{StoreDir: store})
	js2, err := jetstream.New(mustConnect(t, n2))
	if err != nil {
		t.Fatal(err)
	}
	s, err := js2.Stream(ctx, "T")
	if err != nil {
		t.Fatalf("stream after restart: %v", err)
	}
	msg, err := s.GetMsg(ctx, 1)
	if err != nil {
		t.Fatalf("GetMsg: %v", err)
	}
	if got := string(msg.Data); got != "hello" {
		t.Fatalf("message after restart: got %q, want %q", got, "hello")
	}
}

func TestNATSListenServesTCPClients(t *testing.T) {
	n := mustStartNATS(t, embedded.NATSConfig{StoreDir: t.TempDir(), Listen: "127.0.0.1:0"})
	url := n.ClientURL()
	if !strings.HasPrefix(url, "nats://127.0.0.1:") || strings.HasSuffix(url, ":0") {
		t.Fatalf("ClientURL: got %q, want nats://127.0.0.1:<port>", url)
	}
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatalf("connect over TCP: %v", err)
	}
	defer nc.Close()
	if err := nc.Flush(); err != nil {
		t.Fatalf("flush: %v", err)
	}
}

func TestNATSShutdownClosesClients(t *testing.T) {
	n := mustStartNATS(t, embedded.NATSConfig{StoreDir: t.TempDir()})
	closed := make(chan struct{})
	nc, err := n.Connect(nats.NoReconnect(), nats.ClosedHandler(func(*nats.Conn) { close(closed) }))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	n.Shutdown()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("client still open 5s after Shutdown")
	}
	if n.Server().Running() {
		t.Fatal("server still running after Shutdown")
	}
}

func TestNATSConfigErrors(t *testing.T) {
	tests := []struct {
		name string
		cfg  embedded.NATSConfig
		want string
	}{
		{name: "no store dir", cfg: embedded.NATSConfig{}, want: "StoreDir is required"},
		{name: "bad listen", cfg: embedded.NATSConfig{StoreDir: t.TempDir(), Listen: "nohostport"}, want: "nats listen address"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, err := embedded.StartNATS(tt.cfg)
			if err == nil {
				n.Shutdown()
				t.Fatal("got nil error")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %q, want it to contain %q", err, tt.want)
			}
		})
	}
}
