package main

import (
	"context"
	"sync/atomic"
	"time"
)

// What a load client's app does besides sending, so that chatload is at
// least as demanding as a population of real clients: an app spends CPU on
// each message it is handed (ProcessCost) before it takes the next, so
// with a small ReadAhead its SDK stops reading, and acking, while the app
// is busy; and it reads history over REST now and then (AuditEvery), as an
// app that checks its view against the server does.

// appStats counts the audits' outcomes, for the report.
type appStats struct {
	audits, auditErrors, auditMsgs atomic.Int64
	auditLat                       histogram
}

// process spends the app's CPU on one delivered message: a busy loop, so on
// a saturated box it takes longer, as real work would.
func process(cost time.Duration) {
	if cost <= 0 {
		return
	}
	for start := time.Now(); time.Since(start) < cost; {
	}
}

// auditPage is how many messages one audit reads: the tail of the chat
// that the client has seen.
const auditPage = 50

// startAudits runs an auditor per client until the load stops: about every
// AuditEvery, it reads the last auditPage messages of its first chat up to
// the highest seq it was handed there.
func (f *fleet) startAudits() {
	if f.cfg.AuditEvery <= 0 {
		return
	}
	for _, lc := range f.clients {
		chats := f.plan.clientChats[lc.idx]
		if len(chats) == 0 {
			continue
		}
		f.every(f.cfg.AuditEvery, func() { f.audit(lc, chats[0]) })
	}
}

func (f *fleet) audit(lc *loadClient, chat int32) {
	ctx, cancel := context.WithTimeout(f.sendCtx, 30*time.Second)
	defer cancel()
	after := max(lc.highSeq.Load()-auditPage, 0)
	start := time.Now()
	page, err := lc.c.History(ctx, f.plan.chats[chat].id, after, auditPage)
	f.app.auditLat.record(time.Since(start))
	f.app.audits.Add(1)
	if err != nil {
		f.app.auditErrors.Add(1)
		f.cfg.Logger.Debug("audit", "err", err)
		return
	}
	f.app.auditMsgs.Add(int64(len(page.Messages)))
}

// noteSeq keeps the highest seq lc was handed in its first chat, where its
// audits read up to.
func (lc *loadClient) noteSeq(seq int64) {
	for {
		cur := lc.highSeq.Load()
		if seq <= cur || lc.highSeq.CompareAndSwap(cur, seq) {
			return
		}
	}
}
