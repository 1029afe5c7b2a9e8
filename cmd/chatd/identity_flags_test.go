package main

import (
	"flag"
	"io"
	"testing"
)

// The identity flags reach the node's JWKS config, from the environment when
// no flag is given, and the user claim defaults to sub.
func TestIdentityFlags(t *testing.T) {
	t.Setenv("CHATD_JWKS_URL", "https://idp.example/jwks.json")
	t.Setenv("CHATD_JWT_AUDIENCE", "chatd")
	var s settings
	fs := flag.NewFlagSet("chatd", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	f := registerFlags(fs, &s)
	if err := fs.Parse([]string{"--jwt-issuer", "https://idp.example/"}); err != nil {
		t.Fatal(err)
	}
	if len(f.errs) > 0 {
		t.Fatal(f.errs)
	}
	got := s.node.API.JWKS
	if got.URL != "https://idp.example/jwks.json" || got.Issuer != "https://idp.example/" || got.Audience != "chatd" || got.UserClaim != "sub" {
		t.Fatalf("got %+v, want the env URL and audience, the flag issuer and user claim sub", got)
	}
}
