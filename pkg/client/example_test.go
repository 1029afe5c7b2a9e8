package client_test

import (
	"context"
	"fmt"
	"log"
	"os/signal"
	"syscall"

	"github.com/chatd/chatd/pkg/client"
)

// A client that prints every message of its chats in order, sends one, and
// runs until interrupted.
func Example() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	c, err := client.New(client.Config{
		URL:      "http://127.0.0.1:8080",
		Token:    "eyJ...", // from `chatd token alice`
		TrackAll: true,
	})
	if err != nil {
		log.Fatal(err)
	}
	go func() {
		for ev := range c.Events() { // closed when Run returns
			switch ev.Kind {
			case client.EventMessage:
				m := ev.Message
				fmt.Printf("%s #%d %s: %s\n", m.Chat, m.Seq, m.From, m.Body)
			case client.EventState:
				fmt.Printf("connected=%v close=%d %s\n", ev.State.Connected, ev.State.CloseCode, ev.State.Reason)
			}
		}
	}()
	go func() {
		acc, err := c.Send(ctx, "CHAT_ID", "hello")
		if err != nil {
			log.Print(err)
			return
		}
		fmt.Println("stored as seq", acc.Seq)
	}()
	if err := c.Run(ctx); err != nil {
		log.Fatal(err) // unauthorized or superseded
	}
}
