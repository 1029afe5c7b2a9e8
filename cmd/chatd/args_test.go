package main

import (
	"os"
	"strings"
	"testing"
)

// A word chatd does not know is a usage error before anything starts: it
// used to be ignored (with every flag after it), and chatd served from
// ./data. The environment makes a start that does happen fail at once.
// `chatd help` prints the usage and exits 0.
func TestStrayArgumentsAreUsageErrors(t *testing.T) {
	t.Setenv("CHATD_LISTEN", "127.0.0.1:0")
	t.Setenv("CHATD_JWT_SECRET", "short")
	tests := []struct {
		name string
		args []string
		want string // in the usage error; "" means no error (help)
	}{
		{"help", []string{"help"}, ""},
		{"help token", []string{"help", "token"}, ""},
		{"unknown command", []string{"serve"}, `"serve"`},
		{"argument after flags", []string{"--log-level", "warn", "stray"}, `"stray"`},
		{"token with two users", []string{"token", "alice", "bob"}, `"bob"`},
		{"token with a user after flags", []string{"token", "--ttl", "1h", "alice", "bob"}, `"bob"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Chdir(t.TempDir())
			err := run(tt.args)
			switch {
			case tt.want == "" && exitCode(err) != 0:
				t.Errorf("run(%q): got %v, want help (exit 0)", tt.args, err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want) || exitCode(err) != 2):
				t.Errorf("run(%q): got %v (exit %d), want a usage error naming %s (exit 2)", tt.args, err, exitCode(err), tt.want)
			}
			if _, err := os.Stat("data"); err == nil {
				t.Fatalf("run(%q) created ./data, want nothing started", tt.args)
			}
		})
	}
}
