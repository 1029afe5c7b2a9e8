package main

import (
	"strings"
	"testing"

	"github.com/chatd/chatd/pkg/api"
)

// `chatd token --service NAME` prints a token for NAME that verifies as a
// service's with the server's secret; without --service, a person's.
func TestTokenForAService(t *testing.T) {
	const secret = "0123456789abcdef0123"
	t.Setenv("CHATD_JWT_SECRET", secret)
	for _, tt := range []struct {
		name    string
		args    []string
		service bool
	}{
		{"--service before the name", []string{"token", "--service", "backend"}, true},
		{"flags after --service NAME", []string{"token", "--service", "backend", "--ttl", "1h", "--device", "d1"}, true},
		{"--service after the name", []string{"token", "backend", "--service", "--ttl", "1h"}, true},
		{"a person", []string{"token", "backend"}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tok := strings.TrimSpace(helpText(t, tt.args...))
			id, err := api.VerifyToken([]byte(secret), tok)
			if err != nil {
				t.Fatalf("%q: %v", tok, err)
			}
			if id.User != "backend" || id.Service != tt.service {
				t.Fatalf("got %+v, want user backend, service %v", id, tt.service)
			}
		})
	}
}
