package node

import (
	"testing"
	"time"
)

// docs/architecture.md, invariant 4: history must outlive the delivery buffer;
// a configuration that breaks it is refused at start instead of losing messages
// later.
func TestHistoryMustOutliveTheStream(t *testing.T) {
	tests := []struct {
		name    string
		cfg     Config
		wantErr bool
	}{
		{"defaults", Config{DataDir: "d"}, false},
		{"history shorter than the stream", Config{DataDir: "d", HistoryRetention: time.Hour}, true},
		{"history equal to the stream", Config{DataDir: "d", HistoryRetention: 2 * time.Hour, StreamMaxAge: 2 * time.Hour}, true},
		{"history longer", Config{DataDir: "d", HistoryRetention: 3 * time.Hour, StreamMaxAge: 2 * time.Hour}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.setDefaults()
			if (err != nil) != tt.wantErr {
				t.Fatalf("got %v, want error %v", err, tt.wantErr)
			}
		})
	}
}
