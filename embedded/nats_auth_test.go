package embedded_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chatd/chatd/embedded"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// TestNATSListenRequiresGeneratedCredentials: with an nkey file the
// listener refuses anonymous clients (they could forge envelopes, purge the
// stream, delete consumers), accepts the generated key (what the nats CLI
// gets with --nkey), and chatd's own in-process connection uses it too.
func TestNATSListenRequiresGeneratedCredentials(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	keyFile := filepath.Join(t.TempDir(), "nats-user.nk")
	n := mustStartNATS(t, embedded.NATSConfig{StoreDir: t.TempDir(), Listen: "127.0.0.1:0", NkeyFile: keyFile})

	fi, err := os.Stat(keyFile)
	if err != nil {
		t.Fatalf("nkey file: %v", err)
	}
	if perm := fi.Mode().Perm(); perm != 0o600 {
		t.Errorf("nkey file mode: got %v, want 0600", perm)
	}

	// chatd's in-process connection authenticates with the same key.
	js, err := jetstream.New(mustConnect(t, n))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "T", Subjects: []string{"t.>"}}); err != nil {
		t.Fatalf("CreateStream in-process: %v", err)
	}

	if nc, err := nats.Connect(n.ClientURL(), nats.NoReconnect()); err == nil {
		nc.Close()
		t.Fatal("anonymous TCP client connected, want it refused")
	} else if !strings.Contains(strings.ToLower(err.Error()), "authorization") {
		t.Errorf("anonymous connect: got %v, want an authorization error", err)
	}

	opt, err := nats.NkeyOptionFromSeed(keyFile)
	if err != nil {
		t.Fatalf("read nkey file as the nats CLI would: %v", err)
	}
	nc, err := nats.Connect(n.ClientURL(), opt, nats.NoReconnect())
	if err != nil {
		t.Fatalf("connect with the generated nkey: %v", err)
	}
	defer nc.Close()
	tjs, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tjs.Stream(ctx, "T"); err != nil {
		t.Fatalf("stream T seen by an authenticated TCP client: %v", err)
	}
}

// TestNATSKeepsItsNkeyAcrossRestarts: the key is generated once, so an
// operator's nats CLI setup keeps working after chatd restarts.
func TestNATSKeepsItsNkeyAcrossRestarts(t *testing.T) {
	keyFile := filepath.Join(t.TempDir(), "nats-user.nk")
	n := mustStartNATS(t, embedded.NATSConfig{StoreDir: t.TempDir(), NkeyFile: keyFile})
	first, err := os.ReadFile(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	n.Shutdown()
	mustStartNATS(t, embedded.NATSConfig{StoreDir: t.TempDir(), NkeyFile: keyFile})
	second, err := os.ReadFile(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	if string(first) != string(second) {
		t.Fatal("nkey file changed across a restart, want it kept")
	}
}

// TestNATSRefusesUnauthenticatedNonLoopbackListen: no configuration may
// expose an open NATS port beyond this machine.
func TestNATSRefusesUnauthenticatedNonLoopbackListen(t *testing.T) {
	for _, listen := range []string{":0", "0.0.0.0:0", "[::]:0", "192.0.2.1:4222", "example.com:4222"} {
		t.Run(listen, func(t *testing.T) {
			n, err := embedded.StartNATS(embedded.NATSConfig{StoreDir: t.TempDir(), Listen: listen})
			if err == nil {
				n.Shutdown()
				t.Fatalf("StartNATS with Listen %q and no credentials: got nil error", listen)
			}
			for _, want := range []string{listen, "loopback", "NkeyFile"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("got %q, want it to contain %q", err, want)
				}
			}
		})
	}
	// With credentials in force every interface is allowed.
	n := mustStartNATS(t, embedded.NATSConfig{StoreDir: t.TempDir(), Listen: "0.0.0.0:0", NkeyFile: filepath.Join(t.TempDir(), "k.nk")})
	if n.ClientURL() == "" {
		t.Fatal("no listener with credentials on 0.0.0.0")
	}
}

// TestNATSListenOnATakenPortFailsFast: a listener that cannot bind fails
// the start at once with the reason, rather than after the ready timeout
// with none.
func TestNATSListenOnATakenPortFailsFast(t *testing.T) {
	first := mustStartNATS(t, embedded.NATSConfig{StoreDir: t.TempDir(), Listen: "127.0.0.1:0"})
	taken := strings.TrimPrefix(first.ClientURL(), "nats://")
	began := time.Now()
	n, err := embedded.StartNATS(embedded.NATSConfig{StoreDir: t.TempDir(), Listen: taken})
	if err == nil {
		n.Shutdown()
		t.Fatalf("second server on %s: got nil error", taken)
	}
	if !strings.Contains(err.Error(), "address already in use") {
		t.Errorf("got %q, want the bind error", err)
	}
	if took := time.Since(began); took > 5*time.Second {
		t.Errorf("failed after %v, want within 5s", took)
	}
}
