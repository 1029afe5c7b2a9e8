package main

import (
	"flag"
	"io"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// helpText runs chatd with args and returns what it printed on stdout and
// stderr; it swaps the process's os.Stdout and os.Stderr, so tests that
// use it do not run in parallel.
func helpText(t *testing.T, args ...string) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	out, errOut := os.Stdout, os.Stderr
	os.Stdout, os.Stderr = w, w
	read := make(chan string)
	go func() {
		b, _ := io.ReadAll(r)
		read <- string(b)
	}()
	runErr := run(args)
	os.Stdout, os.Stderr = out, errOut
	w.Close()
	text := <-read
	r.Close()
	if exitCode(runErr) != 0 {
		t.Fatalf("run(%q): got %v, want help (exit 0)", args, runErr)
	}
	return text
}

// serverFlags is every flag `chatd` takes, with its environment variable
// ("" for none).
func serverFlags(t *testing.T) map[string]string {
	t.Helper()
	var s settings
	fs := flag.NewFlagSet("chatd", flag.ContinueOnError)
	f := registerFlags(fs, &s)
	want := map[string]string{"version": ""}
	fs.VisitAll(func(fl *flag.Flag) { want[fl.Name] = f.envOf[fl.Name] })
	return want
}

// helpFlagLine matches a line of --help that documents a flag and returns
// the flag's name: "  --name …" (or the flag package's "  -name …").
func helpFlagLine(line string) (string, bool) {
	rest, ok := strings.CutPrefix(line, "  -")
	if !ok {
		return "", false
	}
	rest = strings.TrimPrefix(rest, "-")
	name, _, _ := strings.Cut(rest, " ")
	name, _, _ = strings.Cut(name, "=")
	return name, name != ""
}

// helpGroups maps each flag in text to the headings ("Storage:") it is
// listed under.
func helpGroups(text string) map[string][]string {
	groups := map[string][]string{}
	heading := ""
	for _, line := range strings.Split(text, "\n") {
		if line != "" && line[0] != ' ' && strings.HasSuffix(line, ":") {
			heading = strings.TrimSuffix(line, ":")
			continue
		}
		if name, ok := helpFlagLine(line); ok {
			groups[name] = append(groups[name], heading)
		}
	}
	return groups
}

// The groups a newcomer looks for, after General (--config, --version), in
// the order --help lists them.
var wantHelpGroups = []string{"General", "Listening", "Storage", "NATS", "Identity", "Limits", "Delivery", "Webhooks", "Cluster", "Observability"}

// Every flag of `chatd` is listed exactly once, under one of the groups.
func TestHelpGroupsEveryFlagOnce(t *testing.T) {
	got := helpGroups(helpText(t, "--help"))
	for name := range serverFlags(t) {
		headings := got[name]
		if len(headings) != 1 || !slices.Contains(wantHelpGroups, headings[0]) {
			t.Errorf("--%s: listed under %q, want exactly once under one of %q", name, headings, wantHelpGroups)
		}
	}
	if t.Failed() {
		return
	}
	var order []string
	for _, line := range strings.Split(helpText(t, "--help"), "\n") {
		h, ok := strings.CutSuffix(line, ":")
		switch {
		case !ok || line[0] == ' ' || h == "Usage":
		case slices.Contains(wantHelpGroups, h):
			order = append(order, h)
		default:
			t.Errorf("heading %q, want only %q", h, wantHelpGroups)
		}
	}
	if !slices.Equal(order, wantHelpGroups) {
		t.Errorf("groups in order %q, want %q", order, wantHelpGroups)
	}
}

// Each line of --help fits 100 columns, and each flag's one line shows its
// environment variable: the detail lives in docs/architecture.md's table.
func TestHelpLinesAreShort(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"token", "--help"}} {
		text := helpText(t, args...)
		for _, line := range strings.Split(text, "\n") {
			if n := utf8.RuneCountInString(line); n > 100 {
				t.Errorf("chatd %s: line of %d columns, want at most 100:\n%s", strings.Join(args, " "), n, line)
			}
		}
	}
	env := serverFlags(t)
	for _, line := range strings.Split(helpText(t, "--help"), "\n") {
		name, ok := helpFlagLine(line)
		if ok && env[name] != "" && !strings.Contains(line, env[name]) {
			t.Errorf("--%s: its line does not name %s:\n%s", name, env[name], line)
		}
	}
}

// Defaults read in human units, not as nanoseconds or a byte count.
func TestHelpDefaultsInHumanUnits(t *testing.T) {
	t.Setenv("CHATD_STREAM_MAX_BYTES", "")
	lines := map[string]string{}
	for _, line := range strings.Split(helpText(t, "--help"), "\n") {
		if name, ok := helpFlagLine(line); ok {
			lines[name] = line
		}
	}
	tests := []struct{ flag, want string }{
		{"stream-max-bytes", " 1 GiB "},
		{"max-body-bytes", " 4 KiB "},
		{"history-retention", " keep forever "},
		{"stream-max-age", " 26h "},
		{"lease", " 10s "},
		{"batch-delay", " 10ms "},
		{"settle-wait", " 250ms "},
		{"dev-login", " off "},
	}
	for _, tt := range tests {
		if line := lines[tt.flag]; !strings.Contains(line, tt.want) {
			t.Errorf("--%s: got line %q, want the default %q in it", tt.flag, line, strings.TrimSpace(tt.want))
		}
	}
	for name, line := range lines {
		for _, raw := range []string{"1073741824", "h0m0s", "m0s"} {
			if strings.Contains(line, raw) {
				t.Errorf("--%s: raw default %q in %q", name, raw, line)
			}
		}
	}
}

// `chatd token --help` (and `chatd help token`) list the token command's
// own flags, not the server's.
func TestTokenHelpListsOnlyItsFlags(t *testing.T) {
	want := []string{"config", "data-dir", "database-url", "device", "jwt-secret", "service", "ttl"}
	for _, args := range [][]string{{"token", "--help"}, {"help", "token"}} {
		var got []string
		for name := range helpGroups(helpText(t, args...)) {
			got = append(got, name)
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("chatd %s lists %q, want %q", strings.Join(args, " "), got, want)
		}
	}
}

// `chatd token` takes only its flags but reads the server's config file:
// the server's other settings in it are left alone, not refused, the
// secret comes from it, and a key no command knows is still an error.
func TestTokenReadsTheServersConfigFile(t *testing.T) {
	t.Setenv("CHATD_JWT_SECRET", "")
	path := mustConfigFile(t, "listen: 127.0.0.1:9000\nlease: 20s\njwt-secret: 0123456789abcdef0123\n")
	out := strings.TrimSpace(helpText(t, "token", "alice", "--config", path))
	if strings.Count(out, ".") != 2 {
		t.Fatalf("got %q, want a token", out)
	}
	err := run([]string{"token", "alice", "--config", mustConfigFile(t, "lsiten: x\n")})
	if err == nil || !strings.Contains(err.Error(), `unknown setting "lsiten"`) {
		t.Fatalf("a key no command knows: got %v, want unknown setting", err)
	}
}

// Defaults read in human units: whole days as days, durations without a
// zero tail, *-bytes counts in the largest exact binary unit, and a zero
// default as what it means.
func TestDefaultText(t *testing.T) {
	tests := []struct {
		name string
		spec flagSpec
		want string
	}{
		{"days", flagSpec{name: "history-retention", def: 2160 * time.Hour}, "90 days"},
		{"one day", flagSpec{name: "ttl", def: 24 * time.Hour}, "1 day"},
		{"hours", flagSpec{name: "stream-max-age", def: 26 * time.Hour}, "26h"},
		{"hours and minutes", flagSpec{name: "x", def: 90 * time.Minute}, "1h30m"},
		{"minutes", flagSpec{name: "x", def: 2 * time.Minute}, "2m"},
		{"fraction", flagSpec{name: "x", def: 2500 * time.Millisecond}, "2.5s"},
		{"zero with its meaning", flagSpec{name: "history-retention", def: time.Duration(0), doc: doc{unset: "keep forever"}}, "keep forever"},
		{"GiB", flagSpec{name: "stream-max-bytes", def: int64(1 << 30)}, "1 GiB"},
		{"MiB, not a fraction of GiB", flagSpec{name: "stream-max-bytes", def: int64(1536 << 20)}, "1536 MiB"},
		{"odd bytes", flagSpec{name: "max-body-bytes", def: 1000}, "1000 bytes"},
		{"a count is not bytes", flagSpec{name: "queue-size", def: 8192}, "8192"},
		{"bool", flagSpec{name: "dev-login", def: false}, "off"},
		{"empty string", flagSpec{name: "nats-url", def: ""}, "none"},
		{"empty list", flagSpec{name: "admin-users", def: []string(nil)}, "none"},
	}
	for _, tt := range tests {
		if got := tt.spec.defaultText(); got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.name, got, tt.want)
		}
	}
}

// outputs runs chatd with args and returns what it printed on stdout and on
// stderr, apart; like helpText it swaps the process's files.
func outputs(t *testing.T, args ...string) (stdoutText, stderrText string, err error) {
	t.Helper()
	capture := func() (*os.File, chan string) {
		r, w, perr := os.Pipe()
		if perr != nil {
			t.Fatal(perr)
		}
		read := make(chan string)
		go func() {
			b, _ := io.ReadAll(r)
			r.Close()
			read <- string(b)
		}()
		return w, read
	}
	ow, oread := capture()
	ew, eread := capture()
	out, errOut := os.Stdout, os.Stderr
	os.Stdout, os.Stderr = ow, ew
	err = run(args)
	os.Stdout, os.Stderr = out, errOut
	ow.Close()
	ew.Close()
	return <-oread, <-eread, err
}

// --help prints on stdout, as `chatd help` does, so `chatd --help | grep
// webhook` finds the line; a command line chatd cannot read still gets its
// error and the usage on stderr.
func TestHelpGoesToStdout(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"-h"}, {"token", "--help"}, {"token", "alice", "-help"}} {
		stdoutText, stderrText, err := outputs(t, args...)
		if exitCode(err) != 0 || !strings.Contains(stdoutText, "Usage:") || stderrText != "" {
			t.Errorf("chatd %q: exit %d, %d bytes on stdout (Usage: %v), %d on stderr (%.40q…); want the usage on stdout only",
				args, exitCode(err), len(stdoutText), strings.Contains(stdoutText, "Usage:"), len(stderrText), stderrText)
		}
	}
	stdoutText, stderrText, err := outputs(t, "--no-such-flag")
	if exitCode(err) != 2 || stdoutText != "" || !strings.Contains(stderrText, "Usage:") {
		t.Errorf("chatd --no-such-flag: exit %d, stdout %q, %d bytes on stderr; want exit 2 and the usage on stderr", exitCode(err), stdoutText, len(stderrText))
	}
}
