package api_test

import (
	"strconv"
	"testing"
)

// The receipt frame carries the stored read_seq as "seq", and "upto" is
// the stored message too: a read of an older message, by any of the
// reader's devices, does not make the chat look unread to anyone.
func TestWSReceiptCarriesStoredSeq(t *testing.T) {
	e := mustEnv(t)
	chat := e.mustGroup(t, "alice", "bob")
	alice, _ := e.dial(t, "alice", "")
	bobPhone, _ := e.dial(t, "bob", "phone")
	bobLaptop, _ := e.dial(t, "bob", "laptop")
	var ids []string
	for i := range 3 {
		alice.sendJSON(sendFrame(chat, "k"+strconv.Itoa(i), "x"))
		ids = append(ids, alice.nextOf("accepted")["id"].(string))
	}
	for range 3 {
		bobPhone.nextOf("msg")
		bobLaptop.nextOf("msg")
	}

	steps := []struct {
		name     string
		upto     string
		wantUpto string
		wantSeq  float64
	}{
		{"read the last", ids[2], ids[2], 3},
		{"older read keeps the newer", ids[0], ids[2], 3},
	}
	for _, tt := range steps {
		bobPhone.sendJSON(map[string]any{"type": "read", "chat": chat, "upto": tt.upto})
		for who, c := range map[string]*wsc{"alice": alice, "bob's other device": bobLaptop} {
			r := c.nextOf("receipt")
			if r["chat"] != chat || r["user"] != "bob" || r["upto"] != tt.wantUpto || r["seq"] != tt.wantSeq {
				t.Errorf("%s: %s got %v, want upto %s seq %v", tt.name, who, r, tt.wantUpto, tt.wantSeq)
			}
		}
	}
	// The reading connection itself gets none: its next frame is the pong.
	bobPhone.sendJSON(map[string]any{"type": "ping"})
	bobPhone.nextOf("pong")
}
