package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/pkg/client"
	"golang.org/x/sync/errgroup"
)

// msgState is a message's current state: what a member derives by applying
// the events handed to it in seq order, and what history says.
type msgState struct {
	Body      string              `json:"body"`
	Meta      json.RawMessage     `json:"meta,omitempty"`
	Edited    bool                `json:"edited,omitempty"`
	Deleted   bool                `json:"deleted,omitempty"`
	Reactions map[string][]string `json:"reactions,omitempty"` // emoji → sorted users
}

func (s *msgState) String() string {
	b, _ := json.Marshal(s)
	return string(b)
}

// stateOf is m's state as a history read carries it. A message handed out
// live carries none of it (a fresh message: not edited, no reactions).
func stateOf(m chatd.Message) *msgState {
	s := &msgState{Body: m.Body, Meta: compact(m.Meta), Edited: m.EditedAt != nil, Deleted: m.Deleted}
	for e, users := range m.Reactions {
		for _, u := range users {
			s.react(e, u, true)
		}
	}
	return s
}

func (s *msgState) react(emoji, user string, on bool) {
	users := s.Reactions[emoji]
	i, found := slices.BinarySearch(users, user)
	switch {
	case on && !found:
		if s.Reactions == nil {
			s.Reactions = make(map[string][]string)
		}
		s.Reactions[emoji] = slices.Insert(users, i, user)
	case !on && found:
		if users = slices.Delete(users, i, i+1); len(users) == 0 {
			delete(s.Reactions, emoji)
		} else {
			s.Reactions[emoji] = users
		}
	}
}

func (s *msgState) equal(o *msgState) bool {
	return s.Body == o.Body && bytes.Equal(s.Meta, o.Meta) && s.Edited == o.Edited && s.Deleted == o.Deleted &&
		maps.EqualFunc(s.Reactions, o.Reactions, slices.Equal)
}

func compact(meta json.RawMessage) json.RawMessage {
	var b bytes.Buffer
	if len(meta) == 0 || json.Compact(&b, meta) != nil {
		return nil
	}
	return b.Bytes()
}

// memberState is what one member derived, by message id. The member's
// consumer applies events; the final check reads it. Safe for concurrent use.
type memberState struct {
	mu   sync.Mutex
	msgs map[string]*msgState
}

// apply folds one event handed to the member (its own included) into the
// state. The client hands a chat's events out in seq order, so an event
// comes after its target; one whose target the member never got is left
// for the final check to report.
func (ms *memberState) apply(m chatd.Message) {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	if ms.msgs == nil {
		ms.msgs = make(map[string]*msgState)
	}
	if m.Kind.Normal() == chatd.EventMessage {
		ms.msgs[m.ID] = stateOf(m)
		return
	}
	s := ms.msgs[m.Target]
	if s == nil {
		return
	}
	switch m.Kind {
	case chatd.EventEdit:
		s.Body, s.Edited = m.Body, true
	case chatd.EventDelete:
		// The server erases text, meta and reactions (docs/protocol.md).
		s.Body, s.Meta, s.Reactions, s.Deleted = "", nil, nil, true
	case chatd.EventReaction:
		s.react(m.Emoji, m.From, m.On != nil && *m.On)
	}
}

func (ms *memberState) get(id string) *msgState {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	if s := ms.msgs[id]; s != nil {
		c := *s
		c.Reactions = maps.Clone(s.Reactions)
		return &c
	}
	return nil
}

// StateMismatch is a message whose state at a member differs from the server's.
type StateMismatch struct {
	Chat   string `json:"chat"`
	ID     string `json:"id"`
	Member string `json:"member"`
	Got    string `json:"got"` // the member's, "missing" when it never got the message
	Want   string `json:"want"`
}

// stateCheck is every message of every chat compared at every member.
type stateCheck struct {
	Messages   int64 // messages checked
	Mismatches int64 // (message, member) pairs that differ
	Examples   []StateMismatch
}

// checkStates reads each chat's history (its current-state fields) through
// the chat's creator and compares every message with what each member
// derived. Run it after the drain, when nothing is in flight.
func checkStates(ctx context.Context, p *plan, clients []*client.Client, derived []memberState, examples int) (stateCheck, error) {
	var mu sync.Mutex
	var out stateCheck
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(4)
	for ci := range p.chats {
		g.Go(func() error {
			ch := &p.chats[ci]
			msgs, err := fullHistory(gctx, clients[ch.members[0]], ch.id)
			if err != nil {
				return err
			}
			mu.Lock()
			defer mu.Unlock()
			for _, m := range msgs {
				if m.Kind.Normal() != chatd.EventMessage {
					continue
				}
				out.Messages++
				want := stateOf(m)
				for _, mem := range ch.members {
					got := derived[mem].get(m.ID)
					if got != nil && got.equal(want) {
						continue
					}
					out.Mismatches++
					if len(out.Examples) < examples {
						g := "missing"
						if got != nil {
							g = got.String()
						}
						out.Examples = append(out.Examples, StateMismatch{Chat: ch.id, ID: m.ID, Member: p.users[mem], Got: g, Want: want.String()})
					}
				}
			}
			return nil
		})
	}
	err := g.Wait()
	return out, err
}

// fullHistory pages through chat's history, waiting out REST rate limits.
func fullHistory(ctx context.Context, c *client.Client, chat string) ([]chatd.Message, error) {
	var all []chatd.Message
	var after int64
	for {
		page, err := c.History(ctx, chat, after, 1000)
		if errors.Is(err, chatd.ErrRateLimited) {
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(time.Second):
			}
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("state check: %w", err)
		}
		if len(page.Messages) == 0 {
			return all, nil
		}
		all = append(all, page.Messages...)
		after = page.Messages[len(page.Messages)-1].Seq
		if page.Next == nil {
			return all, nil
		}
	}
}
