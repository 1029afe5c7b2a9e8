package client

import (
	"context"
	"fmt"

	"github.com/chatd/chatd"
)

// historyLimit is the page size asked for; the server caps pages at 1000.
const historyLimit = 1000

// syncChat pulls chat's history after its resume point, page by page until
// `next` is null, and merges it. A page that starts above the seq asked for
// means history no longer holds the seqs in between (purged past
// retention): they are skipped so the chat does not wait for them forever.
func (c *Client) syncChat(ctx context.Context, chat string) error {
	after, ok := c.tracker.contiguous(chat)
	if !ok {
		return nil
	}
	for {
		page, err := c.History(ctx, chat, after, historyLimit)
		if err != nil {
			return err
		}
		c.stats.historyPages.Add(1)
		if len(page.Messages) == 0 {
			return nil
		}
		for i := range page.Messages {
			page.Messages[i].Chat = chat
		}
		if first := page.Messages[0].Seq; first > after+1 {
			c.skip(chat, first-1)
		}
		dups := c.deliver(page.Messages, ViaHistory)
		c.stats.historyDups.Add(int64(dups))
		if page.Next == nil || ctx.Err() != nil {
			return ctx.Err()
		}
		after = page.Messages[len(page.Messages)-1].Seq
	}
}

// skip declares chat's seqs up to seq gone and hands out what that releases.
func (c *Client) skip(chat string, seq int64) {
	c.deliverMu.Lock()
	defer c.deliverMu.Unlock()
	from, ok := c.tracker.contiguous(chat)
	if !ok || seq <= from {
		return
	}
	ready := c.tracker.skipTo(chat, seq)
	gone := seq - from
	for _, e := range ready {
		if e.msg.Seq <= seq {
			gone--
		}
	}
	c.stats.skipped.Add(gone)
	c.log.Warn("history no longer holds seqs; skipping them", "chat", chat, "from", from+1, "to", seq)
	c.handOut(ready)
}

// HistoryPage is one page of a chat's history, oldest first.
type HistoryPage struct {
	Messages []chatd.Message `json:"messages"`
	// Next is the id to pass as `since` for the following page; nil when
	// this page is known to be the last.
	Next *string `json:"next"`
}

// History fetches one page of chat's messages with seq above afterSeq
// (GET /api/chats/{id}/messages?after_seq=N&limit=L). It does not touch the
// tracker: it is for tools that check history themselves. limit ≤ 0 means
// the server's default.
func (c *Client) History(ctx context.Context, chat string, afterSeq int64, limit int) (HistoryPage, error) {
	q := fmt.Sprintf("after_seq=%d", afterSeq)
	if limit > 0 {
		q += fmt.Sprintf("&limit=%d", limit)
	}
	var page HistoryPage
	if err := c.rest(ctx, "GET", "/api/chats/"+pathEscape(chat)+"/messages?"+q, nil, &page); err != nil {
		return HistoryPage{}, fmt.Errorf("history of %s: %w", chat, err)
	}
	return page, nil
}
