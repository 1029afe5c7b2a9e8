package wire_test

import (
	"errors"
	"reflect"
	"testing"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/pkg/wire"
)

func TestDecodeAuthFrame(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    wire.ClientFrame
		wantErr error
	}{
		{"auth", `{"type":"auth","token":"a.b.c"}`, wire.ClientFrame{Type: wire.FrameAuth, Token: "a.b.c"}, nil},
		// An empty token is the server's to refuse (close 4401), not a
		// malformed frame.
		{"auth with empty token", `{"type":"auth","token":""}`, wire.ClientFrame{Type: wire.FrameAuth}, nil},
		{"auth without token", `{"type":"auth"}`, wire.ClientFrame{}, chatd.ErrInvalid},
		{"auth with null token", `{"type":"auth","token":null}`, wire.ClientFrame{}, chatd.ErrInvalid},
		{"auth with numeric token", `{"type":"auth","token":5}`, wire.ClientFrame{}, chatd.ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := wire.DecodeClientFrame([]byte(tt.in), testMaxFrame)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestAuthFramesRoundTrip(t *testing.T) {
	f := wire.ClientFrame{Type: wire.FrameAuth, Token: "eyJ.x\"y.z"}
	data := wire.AppendClientFrame(nil, &f)
	if want := `{"type":"auth","token":"eyJ.x\"y.z"}`; string(data) != want {
		t.Errorf("got %s, want %s", data, want)
	}
	got, err := wire.DecodeClientFrame(data, testMaxFrame)
	if err != nil || !reflect.DeepEqual(got, f) {
		t.Errorf("decode %s: got %+v, %v; want %+v", data, got, err, f)
	}

	authed := wire.AppendAuthed(nil, 1767225600)
	if want := `{"type":"authed","exp":1767225600}`; string(authed) != want {
		t.Errorf("got %s, want %s", authed, want)
	}
	var sf wire.ServerFrame
	if err := wire.DecodeServerFrame(authed, &sf); err != nil || sf.Type != wire.FrameAuthed || sf.Exp != 1767225600 {
		t.Errorf("decode %s: got %+v, %v", authed, sf, err)
	}
}
