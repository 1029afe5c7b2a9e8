package main

import (
	"bytes"
	"flag"
	"io"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the flag tables in README.md and docs/architecture.md")

const (
	flagsBegin = "<!-- flags:begin -->"
	flagsEnd   = "<!-- flags:end -->"
)

// The flag tables in README.md and docs/architecture.md are generated from
// the flags' declarations, so the docs say what the binary does; `go
// generate ./cmd/chatd` (this test with -update) rewrites them.
func TestFlagTables(t *testing.T) {
	fs := flag.NewFlagSet("chatd", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	table := markdownFlags(registerFlags(fs, &settings{}).specs)
	for _, name := range []string{"README.md", "docs/architecture.md"} {
		path := filepath.Join("..", "..", name)
		old, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		begin, end := bytes.Index(old, []byte(flagsBegin)), bytes.Index(old, []byte(flagsEnd))
		if begin < 0 || end < begin {
			t.Errorf("%s: no %s … %s markers around its flag table", name, flagsBegin, flagsEnd)
			continue
		}
		want := string(old[:begin+len(flagsBegin)]) + "\n" + table + "\n" + string(old[end:])
		if string(old) == want {
			continue
		}
		if *update {
			if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		t.Errorf("%s: its flag table differs from the flags declared in cmd/chatd/config.go; regenerate it with `go generate ./cmd/chatd`", name)
	}
}
