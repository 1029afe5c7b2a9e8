package main

import (
	"testing"
	"time"
)

// In each round over the clients every client sends once, whatever the
// order; spread puts a pair's two sends half a round apart, crossing
// back to back.
func TestPairsOrder(t *testing.T) {
	tests := []struct {
		order   string
		wantGap int64
	}{
		{order: "", wantGap: 6},
		{order: pairsSpread, wantGap: 6},
		{order: pairsCrossing, wantGap: 1},
	}
	for _, tt := range tests {
		t.Run(tt.order, func(t *testing.T) {
			cfg := Config{Scenario: scenarioPairs, Clients: 12, PairsOrder: tt.order, Rate: 100, Duration: time.Second}
			if err := cfg.setDefaults(); err != nil {
				t.Fatal(err)
			}
			p := newPlan(&cfg, "r")
			n := int64(len(p.users))
			for round := range int64(2) {
				at := make(map[int]int64) // sender → its send's index in the round
				for i := round * n; i < (round+1)*n; i++ {
					s, chat := p.pick(i)
					if _, dup := at[s]; dup {
						t.Fatalf("round %d: client %d sends twice", round, s)
					}
					if m := p.chats[chat].members; m[0] != s && m[1] != s {
						t.Fatalf("client %d sends to chat %d of %v", s, chat, m)
					}
					at[s] = i
				}
				if int64(len(at)) != n {
					t.Fatalf("round %d: %d of %d clients sent", round, len(at), n)
				}
				for c := range p.chats {
					m := p.chats[c].members
					if gap := at[m[1]] - at[m[0]]; gap != tt.wantGap {
						t.Errorf("round %d: pair %v sends %d apart, want %d", round, m, gap, tt.wantGap)
					}
				}
			}
		})
	}
}

func TestPairsOrderUnknown(t *testing.T) {
	cfg := Config{Scenario: scenarioPairs, Clients: 12, PairsOrder: "random", Rate: 100, Duration: time.Second}
	if err := cfg.setDefaults(); err == nil {
		t.Fatal("--pairs-order random accepted, want an error naming spread and crossing")
	}
}
