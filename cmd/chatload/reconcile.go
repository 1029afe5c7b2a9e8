package main

import (
	"context"
	"time"
)

// LostMessage is an accepted message a recipient never got.
type LostMessage struct {
	ID       string  `json:"id"`
	Chat     string  `json:"chat"`
	Seq      int64   `json:"seq"`
	From     string  `json:"from"`
	To       string  `json:"to"`
	SentAtMS float64 `json:"sent_at_ms"` // since the run's start
}

// reconciliation is every accepted message checked at every recipient.
type reconciliation struct {
	Accepted           int64         // accepted sends checked
	ExpectedDeliveries int64         // Σ recipients over accepted messages
	Missing            int64         // (message, recipient) pairs not handed out
	Lost               int64         // messages with at least one missing recipient
	Examples           []LostMessage // the first few lost, for the report
}

// reconcile checks every accepted message against each recipient's inbox.
// It may run while deliveries still arrive (the drain loop polls it).
func (r *recorder) reconcile(examples int) reconciliation {
	var out reconciliation
	for s := range r.senders {
		l := &r.senders[s]
		// Held across the sender's records: finish writes into l.recs,
		// which an append may have moved. Inbox locks nest inside it; no
		// path takes them in the other order.
		l.mu.Lock()
		for i := range l.recs {
			rec := &l.recs[i]
			if rec.state != sendAccepted {
				continue
			}
			out.Accepted++
			lost := false
			for _, m := range r.plan.chats[rec.chat].members {
				if m == s {
					continue
				}
				out.ExpectedDeliveries++
				if r.inboxes[m].has(rec.chat, rec.seq) {
					continue
				}
				out.Missing++
				lost = true
				if len(out.Examples) < examples {
					out.Examples = append(out.Examples, LostMessage{
						ID: rec.id, Chat: r.plan.chats[rec.chat].id, Seq: rec.seq,
						From: r.plan.users[s], To: r.plan.users[m], SentAtMS: ms(time.Duration(rec.sentAt)),
					})
				}
			}
			if lost {
				out.Lost++
			}
		}
		l.mu.Unlock()
	}
	return out
}

// awaitDelivered polls reconcile until nothing is missing or ctx ends.
func (r *recorder) awaitDelivered(ctx context.Context, poll time.Duration) {
	t := time.NewTicker(poll)
	defer t.Stop()
	for r.reconcile(0).Missing != 0 {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
