package store

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/chatd/chatd"
	"github.com/jackc/pgx/v5"
)

// Events (docs/protocol.md "Events (v2)") go through CommitBatch like
// messages: one history row and one outbox row each, seq under the chat
// lock. What they add is step (d): the batch reads the messages its events
// refer to after locking their chats, so the rules below see every event
// committed before, and the target's current state is written in the same
// transaction as the event.

// target is the current state of a message the batch's events refer to, as
// loaded and then changed by the batch's accepted events in batch order.
type target struct {
	id, chat, sender string
	kind             chatd.EventKind
	deleted          bool
	body             string
	editedAt         *time.Time
	reactions        map[string][]string

	dirty  bool // state changed: write it back
	erased bool // deleted in this batch: erase the bodies of its edits
}

// targetsSQL reads the targets of a batch (step d). It runs after the chat
// locks in the same pipeline, and an event's target is in the event's chat,
// so no concurrent batch changes these rows meanwhile.
const targetsSQL = `select msg_id, chat_id, sender, kind, deleted, body, edited_at, reactions
	from history where msg_id = any($1)`

func (p *commitPlan) targetIDs() []string {
	var ids []string
	for i := range p.sends {
		if t := p.sends[i].Target; t != "" && !slices.Contains(ids, t) {
			ids = append(ids, t)
		}
	}
	return ids
}

func (p *commitPlan) loadTargets(br pgx.BatchResults) error {
	return readRows(br, "load targets", func(r pgx.Rows) error {
		t := &target{}
		err := r.Scan(&t.id, &t.chat, &t.sender, &t.kind, &t.deleted, &t.body, &t.editedAt, &t.reactions)
		t.kind = t.kind.Normal()
		p.targets[t.id] = t
		return err
	})
}

// checkTarget applies the protocol's rules to an event whose sender is a
// member of its chat: the target must be a message of the same chat
// (chatd.ErrNotFound), not an event or deleted (chatd.ErrInvalid), and
// edits and deletes come only from its author (chatd.ErrForbidden). A
// message returns a nil target.
func (p *commitPlan) checkTarget(snd *Send) (*target, error) {
	kind := snd.Kind.Normal()
	if kind == chatd.EventMessage {
		return nil, nil
	}
	t := p.targets[snd.Target]
	switch {
	case t == nil || t.chat != snd.Chat:
		return nil, fmt.Errorf("message %s not found in chat %s: %w", snd.Target, snd.Chat, chatd.ErrNotFound)
	case t.kind != chatd.EventMessage:
		return nil, fmt.Errorf("%s is a %s event, not a message: %w", snd.Target, t.kind, chatd.ErrInvalid)
	case kind != chatd.EventReaction && t.sender != snd.From:
		return nil, fmt.Errorf("only the author may %s message %s: %w", kind, snd.Target, chatd.ErrForbidden)
	case t.deleted:
		return nil, fmt.Errorf("message %s is deleted: %w", snd.Target, chatd.ErrInvalid)
	}
	return t, nil
}

// apply changes t by the accepted event snd (nil t: a message, no-op).
// Reactions are sets: adding twice or removing what is absent changes
// nothing, though the event is still stored.
func (t *target) apply(snd *Send, ts time.Time) {
	if t == nil {
		return
	}
	t.dirty = true
	switch snd.Kind {
	case chatd.EventEdit:
		t.body, t.editedAt = snd.Body, &ts
	case chatd.EventDelete:
		t.deleted, t.erased, t.body, t.reactions = true, true, "", nil
	case chatd.EventReaction:
		users := t.reactions[snd.Emoji]
		i, found := slices.BinarySearch(users, snd.From)
		switch {
		case snd.On && !found:
			if t.reactions == nil {
				t.reactions = make(map[string][]string)
			}
			t.reactions[snd.Emoji] = slices.Insert(slices.Clone(users), i, snd.From)
		case !snd.On && found:
			users = slices.Delete(slices.Clone(users), i, i+1)
			if len(users) == 0 {
				delete(t.reactions, snd.Emoji)
			} else {
				t.reactions[snd.Emoji] = users
			}
		}
	}
}

// storedKind is a history row's kind as chatd.Message carries it ("" for a
// message).
func storedKind(k chatd.EventKind) chatd.EventKind {
	if k == chatd.EventMessage {
		return ""
	}
	return k
}

// eventColumns are the event fields of the fresh rows, NULL where absent.
type eventColumns struct {
	kinds                  textArray
	targets, metas, emojis []*string
	ons                    []*bool
}

func (p *commitPlan) eventColumns() eventColumns {
	n := len(p.fresh)
	c := eventColumns{kinds: make(textArray, n), targets: make([]*string, n), metas: make([]*string, n),
		emojis: make([]*string, n), ons: make([]*bool, n)}
	for k, i := range p.fresh {
		m := &p.out[i].Message
		c.kinds[k] = string(m.Kind.Normal())
		if m.Target != "" {
			c.targets[k] = &m.Target
		}
		if len(m.Meta) > 0 {
			meta := string(m.Meta)
			c.metas[k] = &meta
		}
		if m.Kind == chatd.EventReaction {
			c.emojis[k], c.ons[k] = &m.Emoji, m.On
		}
	}
	return c
}

// queueTargetUpdates queues the statements that write the new state of every
// target the batch changed and, for a message deleted in it, erase the
// bodies of its edit events (they stay in the log as events with body "").
// It returns how many it queued. They are queued after the events' inserts,
// so an edit accepted in the same batch as the delete is erased too.
func (p *commitPlan) queueTargetUpdates(b *pgx.Batch) (int, error) {
	var ids, bodies []string
	var edited []*time.Time
	var deleted []bool
	var reactions []*string
	var erased []string
	for id, t := range p.targets {
		if !t.dirty {
			continue
		}
		var rx *string
		if len(t.reactions) > 0 {
			b, err := json.Marshal(t.reactions)
			if err != nil {
				return 0, fmt.Errorf("encode reactions: %w", err)
			}
			s := string(b)
			rx = &s
		}
		ids, bodies, edited = append(ids, id), append(bodies, t.body), append(edited, t.editedAt)
		deleted, reactions = append(deleted, t.deleted), append(reactions, rx)
		if t.erased {
			erased = append(erased, id)
		}
	}
	if len(ids) == 0 {
		return 0, nil
	}
	b.Queue(`update history h
		set body = u.body, edited_at = u.edited_at, deleted = u.deleted, reactions = u.reactions::jsonb,
		    meta = case when u.deleted then null else h.meta end
		from unnest($1::text[], $2::text[], $3::timestamptz[], $4::bool[], $5::text[])
			as u(msg_id, body, edited_at, deleted, reactions)
		where h.msg_id = u.msg_id`, ids, bodies, edited, deleted, reactions)
	if len(erased) == 0 {
		return 1, nil
	}
	b.Queue(`update history set body = '' where target = any($1) and kind = 'edit'`, erased)
	return 2, nil
}
