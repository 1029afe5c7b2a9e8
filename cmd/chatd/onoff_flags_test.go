package main

import (
	"testing"

	"github.com/chatd/chatd/pkg/node"
)

// The two-valued delivery flags take their default, then the environment,
// then the flag: --settle is auto unless told off, --forward-commits on
// unless told off (a node refuses any other value: pkg/node
// TestForwardValues).
func TestOnOffFlags(t *testing.T) {
	flags := []struct {
		flag, env string
		on, off   string
		got       func(*settings) string
	}{
		{"settle", "CHATD_SETTLE", node.SettleAuto, node.SettleOff, func(s *settings) string { return s.node.Settle }},
		{"forward-commits", "CHATD_FORWARD_COMMITS", node.ForwardOn, node.ForwardOff, func(s *settings) string { return s.node.Forward }},
	}
	for _, f := range flags {
		tests := []struct {
			name string
			env  string
			args []string
			want string
		}{
			{"default", "", nil, f.on},
			{"env", f.off, nil, f.off},
			{"flag", "", []string{"--" + f.flag, f.off}, f.off},
			{"flag over env", f.off, []string{"--" + f.flag, f.on}, f.on},
		}
		for _, tt := range tests {
			t.Run(f.flag+"/"+tt.name, func(t *testing.T) {
				t.Setenv(f.env, tt.env)
				s, err := parseWith(t, tt.args...)
				if err != nil {
					t.Fatal(err)
				}
				if got := f.got(&s); got != tt.want {
					t.Fatalf("got --%s %q, want %q", f.flag, got, tt.want)
				}
			})
		}
	}
}
