package api

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/chatd/chatd"
)

// Membership cache bounds. Typing and receipts need a chat's members on
// every frame; a store query each time would cost the database more than
// the signal is worth. A member added or removed is seen within
// memberCacheTTL: a removed member may get typing or receipts for that
// long, which best-effort signals tolerate.
const (
	memberCacheTTL  = 2 * time.Second
	memberCacheSize = 10000
)

// memberCache keeps recently loaded chats (with their member lists) for
// memberCacheTTL. Safe for concurrent use.
type memberCache struct {
	chats Chats
	now   func() time.Time

	mu      sync.Mutex
	entries map[string]cachedChat
}

type cachedChat struct {
	chat   chatd.Chat
	loaded time.Time
}

func newMemberCache(chats Chats, now func() time.Time) *memberCache {
	return &memberCache{chats: chats, now: now, entries: make(map[string]cachedChat)}
}

// members returns chat's members once user is one of them: the error wraps
// chatd.ErrNotFound for an unknown chat and chatd.ErrForbidden for a
// non-member. A cached chat that does not list user is loaded again, so a
// member just added is not refused for the cache's lifetime.
func (m *memberCache) members(ctx context.Context, chat, user string) ([]string, error) {
	if c, ok := m.cached(chat); ok && slices.Contains(c.Members, user) {
		return c.Members, nil
	}
	c, err := m.chats.Chat(ctx, chat)
	if err != nil {
		return nil, err
	}
	m.put(c)
	if !slices.Contains(c.Members, user) {
		return nil, fmt.Errorf("%s is not a member of %s: %w", user, chat, chatd.ErrForbidden)
	}
	return c.Members, nil
}

func (m *memberCache) cached(chat string) (chatd.Chat, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.entries[chat]
	if !ok || m.now().Sub(e.loaded) > memberCacheTTL {
		return chatd.Chat{}, false
	}
	return e.chat, true
}

func (m *memberCache) put(c chatd.Chat) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	if len(m.entries) >= memberCacheSize {
		for id, e := range m.entries {
			if now.Sub(e.loaded) > memberCacheTTL {
				delete(m.entries, id)
			}
		}
		if len(m.entries) >= memberCacheSize {
			clear(m.entries) // all fresh: a burst over many chats; start over
		}
	}
	m.entries[c.ID] = cachedChat{chat: c, loaded: now}
}
