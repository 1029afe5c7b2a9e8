package main

import (
	"strings"
	"testing"

	"github.com/chatd/chatd/pkg/webhook"
)

const testSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// --webhook repeats and replaces CHATD_WEBHOOK; the config file's entries
// add endpoints with their own secret and filters; --webhook-secret signs
// the rest.
func TestWebhookSettings(t *testing.T) {
	path := mustConfigFile(t, `
webhooks:
  - url: https://file.example/hook
    secret: whsec_c2Vjb25kIHNlY3JldCBvZiAyNCBieXRlcw==
    events: [message, reaction]
    chats: [c1]
  - url: https://file2.example/hook
`)
	t.Setenv("CHATD_WEBHOOK", "https://env.example/a,https://env.example/b")
	t.Setenv("CHATD_WEBHOOK_SECRET", testSecret)

	s, err := parseWith(t, "--config", path)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range s.node.Webhook.Endpoints {
		got = append(got, e.URL+" "+e.Secret[:10]+" "+strings.Join(kinds(e.Kinds), "+")+" "+strings.Join(e.Chats, "+"))
	}
	want := []string{
		"https://env.example/a whsec_MfKQ  ",
		"https://env.example/b whsec_MfKQ  ",
		"https://file.example/hook whsec_c2Vj message+reaction c1",
		"https://file2.example/hook whsec_MfKQ  ",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("endpoints:\ngot  %q\nwant %q", got, want)
	}

	s, err = parseWith(t, "--webhook", "https://flag.example/1", "--webhook", "https://flag.example/2")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(s.node.Webhook.Endpoints); n != 2 || s.node.Webhook.Endpoints[1].URL != "https://flag.example/2" {
		t.Fatalf("--webhook twice over CHATD_WEBHOOK: got %+v, want the two flag URLs", s.node.Webhook.Endpoints)
	}
}

// While a secret is rotated, an entry's secret is a list, and
// CHATD_WEBHOOK_SECRET holds several separated by spaces: every one of them
// reaches the endpoint, which signs with each.
func TestWebhookSecretsWhileRotating(t *testing.T) {
	const other = "whsec_c2Vjb25kIHNlY3JldCBvZiAyNCBieXRlcw=="
	path := mustConfigFile(t, "webhooks:\n  - url: https://file.example/hook\n    secret: ["+other+", "+testSecret+"]\n")
	t.Setenv("CHATD_WEBHOOK_SECRET", testSecret+" "+other)
	s, err := parseWith(t, "--config", path, "--webhook", "https://flag.example/hook")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range s.node.Webhook.Endpoints {
		if keys, err := webhook.ParseSecrets(e.Secret); err != nil || len(keys) != 2 {
			t.Errorf("%s: secret %q gives %d keys, %v; want 2", e.URL, e.Secret, len(keys), err)
		}
	}
}

func TestWebhookSettingsRefused(t *testing.T) {
	for _, tc := range []struct{ name, file, want string }{
		{"unknown key", "webhooks:\n  - url: https://x.example\n    secrets: whsec_x\n", `unknown key "secrets"`},
		{"no url", "webhooks:\n  - secret: whsec_x\n", "url is required"},
		{"no secret", "webhooks:\n  - url: https://x.example\n", "has no secret"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseWith(t, "--config", mustConfigFile(t, tc.file))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error with %q", err, tc.want)
			}
		})
	}
}

func kinds[T ~string](ks []T) []string {
	out := make([]string, len(ks))
	for i, k := range ks {
		out[i] = string(k)
	}
	return out
}

// The notification settings: flags, their variables, the config file; an
// unknown preview is refused with the values to use.
func TestNotifySettings(t *testing.T) {
	path := mustConfigFile(t, "notify-preview: text\nwebhooks:\n  - url: https://push.example/hook\n    secret: "+testSecret+"\n    events: [notify]\n")
	s, err := parseWith(t, "--config", path, "--notify-after", "5s")
	if err != nil {
		t.Fatal(err)
	}
	if s.node.Notify.After.String() != "5s" || s.node.Notify.Preview != "text" {
		t.Fatalf("notify: after %v, preview %q; want 5s and text", s.node.Notify.After, s.node.Notify.Preview)
	}
	if eps := s.node.Webhook.Endpoints; len(eps) != 1 || len(eps[0].Kinds) != 1 || eps[0].Kinds[0] != "notify" {
		t.Fatalf("endpoints %+v, want one taking notify", eps)
	}
	t.Setenv("CHATD_NOTIFY_PREVIEW", "everything")
	if _, err := parseWith(t); err == nil || !strings.Contains(err.Error(), "use none, sender or text") {
		t.Fatalf("CHATD_NOTIFY_PREVIEW=everything: got %v, want the values to use", err)
	}
}
