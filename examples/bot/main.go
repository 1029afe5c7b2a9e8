// Command bot is a small chatd bot: it answers every message others write in
// its chats with an echo, and after a restart carries on where it stopped,
// without answering the history again (docs/bots.md).
//
//	go run ./examples/bot --url http://127.0.0.1:8080 --token "$(bin/chatd token --service echobot --data-dir ./data)"
//
// Its position lives in chatd, not in a file: the bot marks each message read
// once it has answered it and, on start, tracks its chats from what it has
// not read (client.StartUnread). An answer's cid is derived from the message
// it answers, so a message answered just before a crash, but not yet marked
// read, is answered again under the same cid, and chatd stores it once.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/pkg/client"
)

func main() {
	url := flag.String("url", envOr("CHATBOT_URL", "http://127.0.0.1:8080"), "chatd's base URL (env CHATBOT_URL)")
	token := flag.String("token", os.Getenv("CHATBOT_TOKEN"), "the bot's token, e.g. from `chatd token --service echobot` (env CHATBOT_TOKEN)")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "bot: unexpected argument %q\n", flag.Arg(0))
		flag.Usage()
		os.Exit(2)
	}
	if *token == "" {
		fmt.Fprintln(os.Stderr, "bot: no token: pass --token or set CHATBOT_TOKEN (`chatd token --service echobot` prints one)")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := run(ctx, client.Config{URL: *url, Token: *token, Logger: log}, log); err != nil {
		log.Error("bot stopped", "err", err)
		os.Exit(1)
	}
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// run answers messages until ctx ends.
func run(ctx context.Context, cfg client.Config, log *slog.Logger) error {
	cfg.TrackAll = true
	cfg.TrackStart = client.StartUnread
	c, err := client.New(cfg)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	var me string                // the bot's user, from the first hello
	for ev := range c.Events() { // closed when Run returns
		if ev.Kind == client.EventState && ev.State.Connected {
			me = ev.State.User
		}
		if ev.Kind != client.EventMessage {
			continue
		}
		if err := answer(ctx, c, me, ev.Message); err != nil {
			log.Warn("answer failed; it is answered again after a restart", "chat", ev.Message.Chat, "seq", ev.Message.Seq, "err", err)
		}
	}
	if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

// answer echoes m unless it is the bot's own or an event about a message,
// then marks it read: the position the bot resumes from.
func answer(ctx context.Context, c *client.Client, me string, m chatd.Message) error {
	if m.Kind.Normal() == chatd.EventMessage && m.From != me && strings.TrimSpace(m.Body) != "" {
		if _, err := c.SendCID(ctx, m.Chat, "echo-"+m.ID, "echo: "+m.Body); err != nil {
			return err
		}
	}
	return c.Read(ctx, m.Chat, m.ID)
}
