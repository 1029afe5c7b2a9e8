package main

import (
	"flag"
	"io"
	"log/slog"
	"runtime"
	"strings"
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

// --max-procs caps GOMAXPROCS, 0 keeps Go's choice, and a negative count is
// refused with what to give instead.
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
	if err := applyMaxProcs(0); err != nil || runtime.GOMAXPROCS(0) != before {
		t.Fatalf("0: err %v, GOMAXPROCS %d; want nil and Go's %d", err, runtime.GOMAXPROCS(0), before)
	}
	if err := applyMaxProcs(s.maxProcs); err != nil || runtime.GOMAXPROCS(0) != 1 {
		t.Fatalf("1: err %v, GOMAXPROCS %d; want nil and 1", err, runtime.GOMAXPROCS(0))
	}
	if err := applyMaxProcs(-1); err == nil || !strings.Contains(err.Error(), "want 0") {
		t.Fatalf("-1: err %v, want a refusal saying what to give", err)
	}
}

// --heap-floor-bytes defaults to gcfloor's floor and reads its variable; a
// negative size is refused with what to give, and a GOGC variable turns
// the floor off, since whoever set it chose the collector's pace.
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
	if floor, err := heapFloor(32<<20, log); err != nil || floor != 32<<20 {
		t.Fatalf("32 MiB: floor %d, err %v", floor, err)
	}
	if _, err := heapFloor(-1, log); err == nil || !strings.Contains(err.Error(), "want 0") {
		t.Fatalf("-1: err %v, want a refusal saying what to give", err)
	}
	t.Setenv("GOGC", "200")
	if floor, err := heapFloor(32<<20, log); err != nil || floor != 0 {
		t.Fatalf("with GOGC=200: floor %d, err %v; want 0 (GOGC wins)", floor, err)
	}
}
