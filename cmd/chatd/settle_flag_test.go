package main

import (
	"testing"

	"github.com/chatd/chatd/pkg/node"
)

// --settle is auto unless the flag or CHATD_SETTLE says off; the flag wins.
func TestSettleFlag(t *testing.T) {
	tests := []struct {
		name string
		env  string
		args []string
		want string
	}{
		{"default", "", nil, node.SettleAuto},
		{"env", "off", nil, node.SettleOff},
		{"flag", "", []string{"--settle", "off"}, node.SettleOff},
		{"flag over env", "off", []string{"--settle", "auto"}, node.SettleAuto},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("CHATD_SETTLE", tt.env)
			s, err := parseWith(t, tt.args...)
			if err != nil {
				t.Fatal(err)
			}
			if s.node.Settle != tt.want {
				t.Fatalf("got --settle %q, want %q", s.node.Settle, tt.want)
			}
		})
	}
}

// --forward-commits is on unless the flag or CHATD_FORWARD_COMMITS says
// off (a node refuses any other value: pkg/node TestForwardValues).
func TestForwardCommitsFlag(t *testing.T) {
	tests := []struct {
		name string
		env  string
		args []string
		want string
	}{
		{"default", "", nil, node.ForwardOn},
		{"env", "off", nil, node.ForwardOff},
		{"flag over env", "off", []string{"--forward-commits", "on"}, node.ForwardOn},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("CHATD_FORWARD_COMMITS", tt.env)
			s, err := parseWith(t, tt.args...)
			if err != nil {
				t.Fatal(err)
			}
			if s.node.Forward != tt.want {
				t.Fatalf("got --forward-commits %q, want %q", s.node.Forward, tt.want)
			}
		})
	}
}
