package ingest_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/pkg/codec"
	"github.com/chatd/chatd/pkg/ingest"
	"github.com/chatd/chatd/pkg/store"
)

// A send whose stream envelope would be over
// Config.MaxEnvelopeBytes is refused with chatd.ErrTooLarge and stores
// nothing, while the same body to a smaller chat, or in plain letters, fits.
func TestSendOverTheEnvelopeLimitIsRefused(t *testing.T) {
	s := mustStore(t)
	small := mustGroup(t, s, "alice", "bob")
	long := make([]string, 250) // 60-byte ids: ~15.7 KB more envelope
	for i := range long {
		long[i] = fmt.Sprintf("%s-%03d", strings.Repeat("m", 56), i)
	}
	big := mustGroup(t, s, append([]string{"alice"}, long...)...)
	body := strings.Repeat("<", 600) // 3600 bytes once escaped
	// Just over the smallest limit ingest allows with a 600-byte body (which
	// leaves room for the worst meta, ~12.3 KB, unused here): 250 more
	// members with 60-byte ids fit with a plain body but not with an
	// escaped one (3,000 bytes more).
	limit := codec.WorstCaseEnvelopeSize(600, 2) + 1500
	in := mustIngest(t, s, func(c *ingest.Config) { c.MaxBodyBytes, c.MaxEnvelopeBytes = 600, limit })
	tests := []struct {
		name, chat, cid, body string
		want                  error
	}{
		{"escaped body, 2 members", small, "a", body, nil},
		{"escaped body, 251 members", big, "b", body, chatd.ErrTooLarge},
		{"plain body, 251 members", big, "c", strings.Repeat("x", 600), nil},
	}
	for _, tt := range tests {
		res, err := in.Send(ctxT(t, 10*time.Second), chatd.SendRequest{Chat: tt.chat, From: "alice", Device: "d", CID: tt.cid, Body: tt.body})
		if err == nil {
			err = res.Err
		}
		if !errors.Is(err, tt.want) || (tt.want == nil && err != nil) {
			t.Errorf("%s: got %v, want %v", tt.name, err, tt.want)
		}
	}
	if n := count(t, s, "history"); n != 2 {
		t.Fatalf("history rows: got %d, want 2", n)
	}
}

// A body limit that cannot fit even a 2-member chat's worst-case envelope
// is refused at start, naming the setting and the value that would fit.
func TestNewRefusesABodyLimitNoEnvelopeFits(t *testing.T) {
	limit := codec.WorstCaseEnvelopeSize(4096, 2)
	cfg := ingest.Config{Store: (*store.Store)(nil), MaxBodyBytes: 4096, MaxEnvelopeBytes: limit}
	if _, err := ingest.New(cfg); err != nil {
		t.Fatalf("worst case exactly at the limit: %v", err)
	}
	cfg.MaxEnvelopeBytes = limit - 1
	_, err := ingest.New(cfg)
	if err == nil || !strings.Contains(err.Error(), "--max-body-bytes") || !strings.Contains(err.Error(), "at most 4095") {
		t.Fatalf("one byte short: got %v, want an error that says to set --max-body-bytes to at most 4095", err)
	}
}
