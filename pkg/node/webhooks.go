package node

import (
	"context"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/pkg/changes"
	"github.com/chatd/chatd/pkg/notify"
	"github.com/chatd/chatd/pkg/store"
	"github.com/chatd/chatd/pkg/webhook"
)

// webhookStore is the store as the webhooks see it.
type webhookStore struct{ s *store.Store }

func (w webhookStore) TryLock(ctx context.Context, name string) (webhook.Lock, bool, error) {
	l, ok, err := w.s.TryWebhookLock(ctx, name)
	if !ok {
		return nil, false, err // never a typed nil in the interface
	}
	return l, true, nil
}

func (w webhookStore) SetAside(ctx context.Context, f chatd.WebhookFailure) (int64, error) {
	return w.s.SetAsideWebhook(ctx, f)
}

func (w webhookStore) Failures(ctx context.Context, endpoint string, after int64, limit int) ([]chatd.WebhookFailure, error) {
	return w.s.WebhookFailures(ctx, endpoint, after, limit)
}

func (w webhookStore) CountFailures(ctx context.Context, endpoint string) (int64, error) {
	return w.s.CountWebhookFailures(ctx, endpoint)
}

func (w webhookStore) Failure(ctx context.Context, id int64) (chatd.WebhookFailure, error) {
	return w.s.WebhookFailure(ctx, id)
}

func (w webhookStore) DeleteFailure(ctx context.Context, id int64) error {
	return w.s.DeleteWebhookFailure(ctx, id)
}

// notifyStore is the store as the notifications see it.
type notifyStore struct{ s *store.Store }

func (w notifyStore) TryLock(ctx context.Context, name string) (notify.Lock, bool, error) {
	l, ok, err := w.s.TryWebhookLock(ctx, name)
	if !ok {
		return nil, false, err // never a typed nil in the interface
	}
	return l, true, nil
}

func (w notifyStore) RecordDelivered(ctx context.Context, users, chats []string, seqs []int64) error {
	ds := make([]store.Delivered, len(users))
	for i := range users {
		ds[i] = store.Delivered{User: users[i], Chat: chats[i], Seq: seqs[i]}
	}
	return w.s.RecordDelivered(ctx, ds)
}

func (w notifyStore) Reached(ctx context.Context, users, chats []string) ([]int64, error) {
	return w.s.Reached(ctx, users, chats)
}

func (w notifyStore) Unread(ctx context.Context, users []string) (map[string]map[string]int64, error) {
	return w.s.Unread(ctx, users)
}

// changesStore is the store as the chat changes publisher sees it.
type changesStore struct{ *store.Store }

func (w changesStore) TryLock(ctx context.Context, name string) (changes.Lock, bool, error) {
	l, ok, err := w.TryWebhookLock(ctx, name)
	if !ok {
		return nil, false, err // never a typed nil in the interface
	}
	return l, true, nil
}
