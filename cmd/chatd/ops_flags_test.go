package main

import (
	"flag"
	"io"
	"log/slog"
	"runtime"
	"testing"

	"github.com/chatd/chatd/internal/gcfloor"
	"github.com/chatd/chatd/pkg/node"
)

// The operator options reach the node's Config from flags and from the
// environment (the NATS password is meant to come from there), and
// --user-claim is --jwt-user-claim under the name.
func TestOperatorFlags(t *testing.T) {
	t.Setenv("CHATD_NATS_PASSWORD", "from-env")
	t.Setenv("CHATD_TLS_KEY", "/etc/chatd/tls.key")
	var s settings
	fs := flag.NewFlagSet("chatd", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	f := registerFlags(fs, &s)
	err := fs.Parse([]string{
		"--nats-url", "tls://nats:4222", "--nats-user", "chatd", "--nats-ca", "ca.pem", "--nats-cert", "c.pem", "--nats-key", "k.pem",
		"--stream-name", "ACME_OUT", "--subject-prefix", "acme.chat", "--tls-cert", "/etc/chatd/tls.crt", "--user-claim", "uid",
	})
	if err != nil || len(f.errs) > 0 {
		t.Fatal(err, f.errs)
	}
	c := s.node
	want := node.NATSOptions{User: "chatd", Password: "from-env", CAFile: "ca.pem", CertFile: "c.pem", KeyFile: "k.pem"}
	if c.NATS != want {
		t.Errorf("NATS options: got %+v, want %+v", c.NATS, want)
	}
	if c.Stream.Name != "ACME_OUT" || c.SubjectPrefix != "acme.chat" || c.TLSCertFile != "/etc/chatd/tls.crt" || c.TLSKeyFile != "/etc/chatd/tls.key" || c.API.JWKS.UserClaim != "uid" {
		t.Errorf("got stream %q prefix %q tls %q/%q user claim %q", c.Stream.Name, c.SubjectPrefix, c.TLSCertFile, c.TLSKeyFile, c.API.JWKS.UserClaim)
	}
}

// Unset, the naming flags keep today's names.
func TestNamingFlagDefaults(t *testing.T) {
	var s settings
	fs := flag.NewFlagSet("chatd", flag.ContinueOnError)
	registerFlags(fs, &s)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	if s.node.Stream.Name != "CHAT_OUTBOX" || s.node.SubjectPrefix != "chat" {
		t.Fatalf("defaults: stream %q prefix %q, want CHAT_OUTBOX and chat", s.node.Stream.Name, s.node.SubjectPrefix)
	}
}

// --max-procs caps GOMAXPROCS and 0 keeps Go's choice (a negative count is
// refused like every flag's: TestNegativeNumbersAreRefused).
func TestMaxProcs(t *testing.T) {
	before := runtime.GOMAXPROCS(0)
	defer runtime.GOMAXPROCS(before)
	t.Setenv("CHATD_MAX_PROCS", "1")
	s, err := parseWith(t)
	if err != nil {
		t.Fatal(err)
	}
	if s.maxProcs != 1 {
		t.Fatalf("CHATD_MAX_PROCS=1 read as %d", s.maxProcs)
	}
	if applyMaxProcs(0); runtime.GOMAXPROCS(0) != before {
		t.Fatalf("0: GOMAXPROCS %d; want Go's %d", runtime.GOMAXPROCS(0), before)
	}
	if applyMaxProcs(s.maxProcs); runtime.GOMAXPROCS(0) != 1 {
		t.Fatalf("1: GOMAXPROCS %d; want 1", runtime.GOMAXPROCS(0))
	}
}

// --heap-floor-bytes defaults to gcfloor's floor and reads its variable, and
// a GOGC variable turns the floor off, since whoever set it chose the
// collector's pace.
func TestHeapFloor(t *testing.T) {
	t.Setenv("GOGC", "")
	s, err := parseWith(t)
	if err != nil {
		t.Fatal(err)
	}
	if s.heapFloor != gcfloor.DefaultFloor {
		t.Fatalf("default %d, want %d", s.heapFloor, gcfloor.DefaultFloor)
	}
	t.Setenv("CHATD_HEAP_FLOOR_BYTES", "0")
	if s, err = parseWith(t); err != nil || s.heapFloor != 0 {
		t.Fatalf("CHATD_HEAP_FLOOR_BYTES=0: %d, %v; want 0 (off)", s.heapFloor, err)
	}
	log := slog.New(slog.DiscardHandler)
	if floor := heapFloor(32<<20, log); floor != 32<<20 {
		t.Fatalf("32 MiB: floor %d", floor)
	}
	t.Setenv("GOGC", "200")
	if floor := heapFloor(32<<20, log); floor != 0 {
		t.Fatalf("with GOGC=200: floor %d; want 0 (GOGC wins)", floor)
	}
}
