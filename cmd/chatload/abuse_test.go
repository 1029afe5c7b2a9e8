package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/fasthttp/websocket"
)

func TestBadShare(t *testing.T) {
	tests := []struct {
		name    string
		clients int
		pct     float64
		want    int
	}{
		{name: "none", clients: 600, pct: 0, want: 0},
		{name: "poison of the fault run", clients: 600, pct: 5, want: 30},
		{name: "flood of the fault run", clients: 600, pct: 1, want: 6},
		{name: "small run keeps one", clients: 60, pct: 1, want: 1},
		{name: "rounds", clients: 60, pct: 5, want: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := badShare(tt.clients, tt.pct); got != tt.want {
				t.Errorf("got %d, want %d", got, tt.want)
			}
		})
	}
}

// TestConfigBadClients: bad clients come out of --clients, and the good
// rest must still pair up.
func TestConfigBadClients(t *testing.T) {
	tests := []struct {
		name     string
		cfg      Config
		wantGood int
		wantErr  bool
	}{
		{name: "fault run", cfg: Config{Clients: 600, PoisonPct: 5, TypingFloodPct: 1}, wantGood: 564},
		{name: "short run", cfg: Config{Clients: 60, PoisonPct: 5, TypingFloodPct: 1}, wantGood: 56},
		{name: "odd good rest", cfg: Config{Clients: 60, PoisonPct: 5}, wantErr: true},
		{name: "over 100 together", cfg: Config{Clients: 60, PoisonPct: 60, TypingFloodPct: 50}, wantErr: true},
		{name: "bad mix", cfg: Config{Clients: 60, PoisonPct: 5, TypingFloodPct: 1, PoisonMix: "nul=1,salt=2"}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := tt.cfg
			cfg.Scenario, cfg.Rate, cfg.Duration = scenarioPairs, 200, time.Second
			err := cfg.setDefaults()
			if (err != nil) != tt.wantErr {
				t.Fatalf("got error %v, want error %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			if got := cfg.goodClients(); got != tt.wantGood {
				t.Errorf("got %d good clients, want %d", got, tt.wantGood)
			}
			if got := len(newPlan(&cfg, "r").users); got != tt.wantGood {
				t.Errorf("got %d planned users, want %d", got, tt.wantGood)
			}
		})
	}
}

func TestParsePoisonMix(t *testing.T) {
	tests := []struct {
		name    string
		mix     string
		wantErr bool
		want    int // kind picked at u = 0.85
	}{
		{name: "default", mix: defaultPoisonMix, want: poisonOversize},
		{name: "nul only", mix: "nul=1", want: poisonNUL},
		{name: "garbage only", mix: "garbage=3", want: poisonGarbage},
		{name: "unknown kind", mix: "nul=1,salt=2", wantErr: true},
		{name: "all zero", mix: "nul=0", wantErr: true},
		{name: "negative", mix: "nul=1,oversize=-1", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, err := parsePoisonMix(tt.mix)
			if (err != nil) != tt.wantErr {
				t.Fatalf("got error %v, want error %v", err, tt.wantErr)
			}
			if err == nil && w.pick(0.85) != tt.want {
				t.Errorf("got kind %d at 0.85, want %d", w.pick(0.85), tt.want)
			}
		})
	}
}

// TestPoisonFrame: each kind is the poison it claims to be.
func TestPoisonFrame(t *testing.T) {
	type send struct{ Type, Chat, CID, Body string }
	decode := func(t *testing.T, data []byte) send {
		t.Helper()
		var s send
		if err := json.Unmarshal(data, &s); err != nil {
			t.Fatalf("got %v decoding %q, want a JSON send", err, data)
		}
		return s
	}
	_, data := poisonFrame(poisonNUL, 3, "c1", "cid1", 100)
	if s := decode(t, data); s.Type != "send" || s.Chat != "c1" || s.CID != "cid1" || !strings.Contains(s.Body, "\x00") {
		t.Errorf("nul: got %+v, want a send to c1 with U+0000 in the body", s)
	}
	for _, tt := range []struct{ maxBody, want int }{{100, 101}, {0, defaultMaxBody + 1}} {
		_, data = poisonFrame(poisonOversize, 0, "c1", "cid1", tt.maxBody)
		if s := decode(t, data); len(s.Body) != tt.want {
			t.Errorf("oversize with max %d: got a body of %d bytes, want %d", tt.maxBody, len(s.Body), tt.want)
		}
	}
	var framing, rules int
	for i := range 4 {
		msgType, data := poisonFrame(poisonGarbage, i, "c1", "cid1", 100)
		switch {
		case msgType == websocket.BinaryMessage && !utf8.Valid(data):
			framing++
		case !json.Valid(data):
			framing++
		default:
			// JSON, so it must break a rule instead: decoded as a send
			// it fails, or it is no send at all.
			var s send
			if err := json.Unmarshal(data, &s); err == nil && s.Type == "send" {
				t.Errorf("garbage %d: got a well-formed send %q", i, data)
			}
			rules++
		}
	}
	if framing != 2 || rules != 2 {
		t.Errorf("garbage: got %d framing and %d rule violations in 4 turns, want 2 and 2", framing, rules)
	}
}

// TestFloodChat: a flooder's chats rotate over its own, the good clients'
// and ids never used before.
func TestFloodChat(t *testing.T) {
	bc := &badClient{idx: 1, chat: "own"}
	others := []string{"g0", "g1"}
	seen := map[string]bool{}
	var own, good, fresh int
	for i := range 30 {
		c := floodChat(i, bc, others, "x")
		switch {
		case c == "own":
			own++
		case c == "g0" || c == "g1":
			good++
		default:
			if seen[c] {
				t.Fatalf("frame %d: got fresh id %q twice", i, c)
			}
			seen[c] = true
			fresh++
		}
	}
	if own != 10 || good != 10 || fresh != 10 {
		t.Errorf("got own %d, good %d, fresh %d of 30, want 10 each", own, good, fresh)
	}
	if c := floodChat(1, bc, nil, "x"); c == "own" {
		t.Errorf("with no good chats: got %q, want a fresh id", c)
	}
}

// TestBuildBad: answers are counted by poison kind (read from the cid),
// flooders' by code, and any good refusal fails the run.
func TestBuildBad(t *testing.T) {
	cfg := Config{Clients: 60, PoisonPct: 5, TypingFloodPct: 1, Scenario: scenarioPairs, Rate: 1, Duration: time.Second}
	if err := cfg.setDefaults(); err != nil {
		t.Fatal(err)
	}
	s := newBadStats()
	s.poisonSent[poisonNUL].Add(2)
	s.answer(rolePoison, badFrame{Type: "rejected", CID: "run-nul-0-0-1", Code: "overloaded"})
	s.answer(rolePoison, badFrame{Type: "rejected", CID: "run-nul-0-0-2", Code: "invalid"})
	s.answer(rolePoison, badFrame{Type: "rejected", CID: "run-oversize-0-0-3", Code: "too_large"})
	s.answer(rolePoison, badFrame{Type: "rejected", Code: "invalid"})
	s.answer(rolePoison, badFrame{Type: "msg", CID: "run-nul-0-0-1"})
	s.answer(roleFlood, badFrame{Type: "rejected", Code: "forbidden"})
	s.closed(4400)
	s.closed(4008)
	s.closed(4008)

	r := buildBad(&cfg, s, map[string]int64{"overloaded": 3, "rate_limited": 1})
	want := map[string]map[string]int64{
		"nul":      {"rejected overloaded": 1, "rejected invalid": 1},
		"oversize": {"rejected too_large": 1},
		"no cid":   {"rejected invalid": 1},
	}
	for k, m := range want {
		for o, n := range m {
			if got := r.PoisonAnswers[k][o]; got != n {
				t.Errorf("answers %s %s: got %d, want %d", k, o, got, n)
			}
		}
	}
	if r.PoisonSent["nul"] != 2 || r.TypingAnswers["rejected forbidden"] != 1 {
		t.Errorf("got poison sent %v, typing answers %v", r.PoisonSent, r.TypingAnswers)
	}
	if r.Closes["4008 rate"] != 2 || r.Closes["4400 protocol"] != 1 {
		t.Errorf("got closes %v, want 4008 twice and 4400 once", r.Closes)
	}
	if r.GoodRefused != 4 || r.GoodOverloaded != 3 || r.Pass() {
		t.Errorf("got refused %d, overloaded %d, pass %v; want 4, 3, false", r.GoodRefused, r.GoodOverloaded, r.Pass())
	}
	if r := buildBad(&cfg, s, map[string]int64{}); !r.Pass() {
		t.Errorf("got fail with no good refusal, want pass")
	}
	var out strings.Builder
	r.writeText(func(f string, a ...any) { fmt.Fprintf(&out, f+"\n", a...) })
	if !strings.Contains(out.String(), "FAIL: 4 good sends refused, 3 of them overloaded") {
		t.Errorf("got report\n%s\nwant the refusals stated", out.String())
	}
}

func TestCheckBaseline(t *testing.T) {
	tests := []struct {
		name      string
		base, p99 float64
		wantOK    bool
	}{
		{name: "within", base: 50, p99: 90, wantOK: true},
		{name: "at the limit", base: 50, p99: 100, wantOK: true},
		{name: "over", base: 50, p99: 101, wantOK: false},
		{name: "no deliveries", base: 50, p99: 0, wantOK: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := checkBaseline("b.json", tt.base, tt.p99, baselineFactor); got.OK != tt.wantOK {
				t.Errorf("got ok %v (ratio %.2f), want %v", got.OK, got.Ratio, tt.wantOK)
			}
		})
	}
}

// TestLoadBaseline reads the live p99 back from a report chatload wrote.
func TestLoadBaseline(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "base.json")
	if err := (&Report{SendToDelivered: Quantiles{P99: 42.5, Count: 10}}).writeJSON(good); err != nil {
		t.Fatal(err)
	}
	if got, err := loadBaseline(good); err != nil || got != 42.5 {
		t.Errorf("got %v, %v; want 42.5, nil", got, err)
	}
	empty := filepath.Join(dir, "empty.json")
	if err := os.WriteFile(empty, []byte(`{"scenario":"pairs"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{empty, filepath.Join(dir, "missing.json")} {
		if _, err := loadBaseline(p); err == nil {
			t.Errorf("%s: got no error, want one", filepath.Base(p))
		}
	}
}
