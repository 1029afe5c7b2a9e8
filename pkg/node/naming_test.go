package node

import (
	"strings"
	"testing"

	"github.com/chatd/chatd/pkg/signal"
	"github.com/chatd/chatd/pkg/stream"
)

// The default naming derives exactly the names chatd used before it was
// configurable, so an upgraded deployment keeps its stream (the presence
// bucket is the signal package's default, renamed with its layout).
func TestDefaultNamingIsTodays(t *testing.T) {
	c := Config{DataDir: "d"}
	if err := c.setDefaults(); err != nil {
		t.Fatal(err)
	}
	got := []string{c.Stream.Name, c.streamSubjects(), c.signalPrefix(), c.presenceBucket()}
	want := []string{stream.DefaultName, stream.SubjectPrefix, signal.DefaultPrefix, signal.DefaultPresenceBucket}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestNamingAndNATSOptionsChecked(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want string // "" means valid
	}{
		{"prefix with dots", Config{SubjectPrefix: "acme.chat", Stream: stream.Config{Name: "ACME_OUT"}}, ""},
		{"wildcard prefix", Config{SubjectPrefix: "chat.*"}, "--subject-prefix"},
		{"empty token", Config{SubjectPrefix: "chat..x"}, "--subject-prefix"},
		{"stream name with a dot", Config{Stream: stream.Config{Name: "A.B"}}, "--stream-name"},
		{"two auth methods", Config{NATSURL: "nats://x", NATS: NATSOptions{User: "u", NkeyFile: "f"}}, "only one"},
		{"password alone", Config{NATSURL: "nats://x", NATS: NATSOptions{Password: "p"}}, "--nats-password needs --nats-user"},
		{"cert without key", Config{NATSURL: "nats://x", NATS: NATSOptions{CertFile: "c"}}, "--nats-cert and --nats-key"},
		{"creds with the embedded NATS", Config{NATS: NATSOptions{CredsFile: "c"}}, "set --nats-url"},
		{"tls cert without key", Config{TLSCertFile: "c"}, "--tls-cert and --tls-key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.cfg.DataDir = "d"
			err := tt.cfg.setDefaults()
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("got %v, want no error", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("got %v, want an error naming %q", err, tt.want)
			}
		})
	}
}
