package main

import (
	"fmt"
	"os"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/pkg/webhook"
	"go.yaml.in/yaml/v4"
)

// webhooksKey is the config file's list of webhook endpoints: the one
// setting that is not a flag, because each entry has its own secret and
// filters.
const webhooksKey = "webhooks"

// fileWebhook is one entry of the config file's webhooks list.
type fileWebhook struct {
	URL string `yaml:"url"`
	// Secret is whsec_…, or several (a list, or separated by spaces) while
	// one is rotated; empty takes --webhook-secret.
	Secret string `yaml:"secret"`
	// Events are the kinds it receives (message, edit, delete, reaction,
	// notify, member, read);
	// empty: all.
	Events []string `yaml:"events"`
	// Chats, if any, are the only chats whose events it receives.
	Chats []string `yaml:"chats"`
}

// webhooksFromFile reads the webhooks list of the config file at path. An
// unknown key in an entry is an error, as an unknown setting is.
func webhooksFromFile(path string) ([]fileWebhook, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--config: %w", err)
	}
	var doc struct {
		Webhooks []map[string]any `yaml:"webhooks"`
	}
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("--config %s: webhooks: want a list of entries with url, secret, events, chats: %w", path, err)
	}
	out := make([]fileWebhook, 0, len(doc.Webhooks))
	for i, entry := range doc.Webhooks {
		var w fileWebhook
		for k, v := range entry {
			var err error
			switch k {
			case "url":
				w.URL, err = settingText(v)
			case "secret":
				w.Secret, err = settingText(v)
			case "events":
				w.Events, err = settingList(v)
			case "chats":
				w.Chats, err = settingList(v)
			default:
				err = fmt.Errorf("unknown key %q (an entry has url, secret, events, chats)", k)
			}
			if err != nil {
				return nil, fmt.Errorf("--config %s: webhooks[%d]: %s: %w", path, i, k, err)
			}
		}
		if w.URL == "" {
			return nil, fmt.Errorf("--config %s: webhooks[%d]: url is required", path, i)
		}
		out = append(out, w)
	}
	return out, nil
}

// settingList is a YAML list (or comma-separated string) as strings.
func settingList(v any) ([]string, error) {
	s, err := settingText(v)
	return splitList(s), err
}

// setWebhooks makes the node's endpoints: every --webhook URL with
// --webhook-secret and every event kind, then the config file's entries.
func setWebhooks(s *settings, fromFile []fileWebhook) error {
	var eps []webhook.Endpoint
	for _, u := range s.webhookURLs {
		eps = append(eps, webhook.Endpoint{URL: u, Secret: s.webhookSecret})
	}
	for _, w := range fromFile {
		e := webhook.Endpoint{URL: w.URL, Secret: w.Secret, Chats: w.Chats}
		if e.Secret == "" {
			e.Secret = s.webhookSecret
		}
		for _, k := range w.Events {
			e.Kinds = append(e.Kinds, chatd.EventKind(k))
		}
		eps = append(eps, e)
	}
	for _, e := range eps {
		if e.Secret == "" {
			return fmt.Errorf("webhook %s has no secret: set --webhook-secret (CHATD_WEBHOOK_SECRET), or secret: in its entry of the config file's webhooks list", e.URL)
		}
	}
	s.node.Webhook.Endpoints = eps
	return nil
}
