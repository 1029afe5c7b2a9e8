package main

import (
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func mustConfigFile(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "chatd.yaml")
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func parseWith(t *testing.T, args ...string) (settings, error) {
	t.Helper()
	var s settings
	fs := flag.NewFlagSet("chatd", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	f := registerFlags(fs, &s)
	if err := fs.Parse(args); err != nil {
		return s, err
	}
	return s, finishSettings(fs, f, &s)
}

// --config: the file's keys are flag names; a flag beats its env variable,
// which beats the file, which beats the default.
func TestConfigFilePrecedence(t *testing.T) {
	path := mustConfigFile(t, `
listen: 127.0.0.1:9000
nats-url: nats://file:4222
lease: 20s
max-pending: 7
admin-users: [root, ops]
log-json: true
stream-name: FILE_OUT
`)
	t.Setenv("CHATD_NATS_URL", "nats://env:4222")
	t.Setenv("CHATD_LEASE", "30s")
	s, err := parseWith(t, "--config", path, "--lease", "40s")
	if err != nil {
		t.Fatal(err)
	}
	c := s.node
	checks := []struct{ name, got, want string }{
		{"listen (file)", c.Listen, "127.0.0.1:9000"},
		{"nats-url (env over file)", c.NATSURL, "nats://env:4222"},
		{"lease (flag over env and file)", c.Push.Lease.String(), (40 * time.Second).String()},
		{"admin-users (file list)", strings.Join(c.API.AdminUsers, ","), "root,ops"},
		{"stream-name (file)", c.Stream.Name, "FILE_OUT"},
		{"data-dir (default)", c.DataDir, "./data"},
	}
	for _, ck := range checks {
		if ck.got != ck.want {
			t.Errorf("%s: got %q, want %q", ck.name, ck.got, ck.want)
		}
	}
	if c.Push.MaxPending != 7 || !s.logJSON {
		t.Errorf("max-pending %d, log-json %v: want 7, true from the file", c.Push.MaxPending, s.logJSON)
	}
}

func TestConfigFileErrors(t *testing.T) {
	tests := []struct{ name, text, want string }{
		{"unknown key", "lsiten: x\n", `unknown setting "lsiten"`},
		{"bad value", "max-pending: many\n", "max-pending"},
		{"not YAML", "listen: [\n", "--config"},
		{"mapping value", "listen: {a: 1}\n", "listen"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseWith(t, "--config", mustConfigFile(t, tt.text))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want an error containing %q", err, tt.want)
			}
		})
	}
	if _, err := parseWith(t, "--config", "/nonexistent/chatd.yaml"); err == nil || !strings.Contains(err.Error(), "--config") {
		t.Fatalf("missing file: got %v, want a --config error", err)
	}
}

// A config file value that does not parse names the setting, the value and
// what the setting takes, as the environment's errors do, not the flag
// package's bare "parse error".
func TestConfigFileBadValueSaysWhatToGive(t *testing.T) {
	for _, c := range []struct{ file, want string }{
		{"lease: abc\n", `lease: "abc": want a duration like 10s`},
		{"rate: 1.5\n", `rate: "1.5": want a whole number`},
		{"dev-login: yes please\n", `dev-login: "yes please": want true or false`},
	} {
		_, err := parseWith(t, "--config", mustConfigFile(t, c.file))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("config %q: err %v, want it to say %q", c.file, err, c.want)
		}
	}
}
