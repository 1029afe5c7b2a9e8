package wire_test

import (
	"testing"
	"time"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/pkg/wire"
)

func TestSignalFramesRoundTrip(t *testing.T) {
	seen := time.Date(2026, 11, 30, 20, 0, 0, 123456789, time.UTC)
	tests := []struct {
		name string
		data []byte
		want wire.ServerFrame
		text string
	}{
		{"typing", wire.AppendTyping(nil, "c1", "bob"), wire.ServerFrame{Type: wire.FrameTyping, Message: chatd.Message{Chat: "c1"}, User: "bob"},
			`{"type":"typing","chat":"c1","user":"bob"}`},
		{"online", wire.AppendPresence(nil, "bob", true, seen), wire.ServerFrame{Type: wire.FramePresence, User: "bob", Online: true},
			`{"type":"presence","user":"bob","online":true}`},
		{"offline", wire.AppendPresence(nil, "bob", false, seen), wire.ServerFrame{Type: wire.FramePresence, User: "bob", LastSeen: seen},
			`{"type":"presence","user":"bob","online":false,"last_seen":"2026-11-30T20:00:00.123456789Z"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if string(tt.data) != tt.text {
				t.Errorf("got %s, want %s", tt.data, tt.text)
			}
			var f wire.ServerFrame
			if err := wire.DecodeServerFrame(tt.data, &f); err != nil {
				t.Fatal(err)
			}
			if f.Type != tt.want.Type || f.Chat != tt.want.Chat || f.User != tt.want.User ||
				f.Online != tt.want.Online || !f.LastSeen.Equal(tt.want.LastSeen) {
				t.Errorf("got %+v, want %+v", f, tt.want)
			}
		})
	}
	if got := string(wire.AppendClientFrame(nil, &wire.ClientFrame{Type: wire.FrameTyping, Chat: "c1"})); got != `{"type":"typing","chat":"c1"}` {
		t.Errorf("client typing: got %s", got)
	}
}
