package main

// The mixed scenario: small groups where each paced turn is a
// send (some with meta), an edit or delete of the sender's own message, a
// reaction on anyone's message, or a read receipt; typing signals run
// beside the turns. Edits, deletes and reactions are events in the chat's
// seq log, so the recorder reconciles them exactly like messages; reads
// and typing are signals, counted but best effort.

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chatd/chatd/pkg/client"
)

// Actions of a mixed turn, in the order of mixWeights.
const (
	actSend = iota
	actEdit
	actDelete
	actReact
	actRead
	numActs
)

// actName is the name of action i in --mix.
func actName(i int) string {
	switch i {
	case actSend:
		return "send"
	case actEdit:
		return "edit"
	case actDelete:
		return "delete"
	case actReact:
		return "react"
	case actRead:
		return "read"
	}
	return ""
}

// defaultMix is the mixed scenario's action weights when --mix is not given.
const defaultMix = "send=50,edit=15,delete=5,react=20,read=10"

// mixWeights are the cumulative weights of the actions, normalised to 1.
type mixWeights [numActs]float64

// parseMix reads "send=50,edit=15,..."; actions left out weigh 0.
func parseMix(s string) (mixWeights, error) {
	var w mixWeights
	var total float64
	for _, part := range strings.Split(s, ",") {
		name, val, ok := strings.Cut(strings.TrimSpace(part), "=")
		x, err := strconv.ParseFloat(val, 64)
		i := actIndex(name)
		if !ok || err != nil || x < 0 || i < 0 {
			return w, fmt.Errorf("mix: bad entry %q (want action=weight with action one of send, edit, delete, react, read)", part)
		}
		w[i] = x
		total += x
	}
	if total <= 0 || w[actSend] <= 0 {
		return w, fmt.Errorf("mix %q: send needs a weight > 0", s)
	}
	var acc float64
	for i := range w {
		acc += w[i] / total
		w[i] = acc
	}
	return w, nil
}

func actIndex(name string) int {
	for i := range numActs {
		if actName(i) == name {
			return i
		}
	}
	return -1
}

// pick maps u in [0,1) to an action.
func (w *mixWeights) pick(u float64) int {
	for i, c := range w {
		if u < c {
			return i
		}
	}
	return actSend
}

// emoji is the i-th of the three reactions the load uses.
func emoji(i int) string {
	switch i {
	case 0:
		return "👍"
	case 1:
		return "❤️"
	}
	return "😂"
}

// chatTargets is what a chat's members may act on, as the load generator
// knows it: accepted messages, each author's not (yet) deleted ones, and
// the deleted ones. A delete removes its target when it is fired, so the
// author never edits or deletes it again; a reaction racing with a delete
// can still be refused (`invalid`), which the report counts as a reject.
type chatTargets struct {
	mu      sync.Mutex
	all     []string         // accepted message ids, in acceptance order
	own     map[int][]string // author → their messages not deleted
	deleted map[string]bool
}

// reactWindow is how far back reactions reach: recent messages, as people do.
const reactWindow = 32

func (t *chatTargets) add(author int, id string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.own == nil {
		t.own, t.deleted = make(map[int][]string), make(map[string]bool)
	}
	t.all = append(t.all, id)
	t.own[author] = append(t.own[author], id)
}

// pickOwn returns a random not-deleted message of author, removing it when
// take is set (a delete); "" if there is none.
func (t *chatTargets) pickOwn(author int, take bool) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	ids := t.own[author]
	if len(ids) == 0 {
		return ""
	}
	i := rand.IntN(len(ids))
	id := ids[i]
	if take {
		ids[i] = ids[len(ids)-1]
		t.own[author] = ids[:len(ids)-1]
		t.deleted[id] = true
	}
	return id
}

// pickAny returns a recent not-deleted message, "" if it finds none.
func (t *chatTargets) pickAny() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(t.all)
	for range 4 {
		if n == 0 {
			return ""
		}
		id := t.all[n-1-rand.IntN(min(n, reactWindow))]
		if !t.deleted[id] {
			return id
		}
	}
	return ""
}

// latest returns the last accepted message, "" if none.
func (t *chatTargets) latest() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.all) == 0 {
		return ""
	}
	return t.all[len(t.all)-1]
}

// mixState is the mixed scenario's part of the fleet: targets per chat,
// what each member derived, and the signal counters.
type mixState struct {
	weights mixWeights
	metaPct float64
	targets []chatTargets
	derived []memberState // per client

	reads, readFailures, receipts          atomic.Int64
	typingSent, typingFailures, typingRecv atomic.Int64
}

func newMixState(cfg *Config, p *plan) *mixState {
	return &mixState{
		weights: cfg.mix, metaPct: cfg.MetaPct,
		targets: make([]chatTargets, len(p.chats)),
		derived: make([]memberState, len(p.users)),
	}
}

// op is one event a turn submits: its kind for the recorder and the call.
type op struct {
	kind   uint8
	submit func(ctx context.Context, c *client.Client, chat, cid string) (client.Accepted, error)
}

// choose turns an action into the op to submit; read returns ok with a nil
// submit and upto set. An action with nothing to act on falls back to a send.
func (m *mixState) choose(act, sender int, chat int32, body string) (o op, upto string) {
	t := &m.targets[chat]
	switch act {
	case actEdit:
		if id := t.pickOwn(sender, false); id != "" {
			return op{kind: kindEdit, submit: func(ctx context.Context, c *client.Client, chat, cid string) (client.Accepted, error) {
				return c.Edit(ctx, chat, cid, id, "edited "+cid)
			}}, ""
		}
	case actDelete:
		if id := t.pickOwn(sender, true); id != "" {
			return op{kind: kindDelete, submit: func(ctx context.Context, c *client.Client, chat, cid string) (client.Accepted, error) {
				return c.Delete(ctx, chat, cid, id)
			}}, ""
		}
	case actReact:
		if id := t.pickAny(); id != "" {
			emoji, on := emoji(rand.IntN(3)), rand.IntN(3) > 0
			return op{kind: kindReaction, submit: func(ctx context.Context, c *client.Client, chat, cid string) (client.Accepted, error) {
				return c.React(ctx, chat, cid, id, emoji, on)
			}}, ""
		}
	case actRead:
		if id := t.latest(); id != "" {
			return op{}, id
		}
	}
	var meta json.RawMessage
	if rand.Float64()*100 < m.metaPct {
		// A number text that must come back as written (docs/protocol.md).
		meta = json.RawMessage(`{"reply_to":"` + t.latest() + `","n":1e3}`)
	}
	return op{kind: kindMessage, submit: func(ctx context.Context, c *client.Client, chat, cid string) (client.Accepted, error) {
		return c.SendMeta(ctx, chat, cid, body, meta)
	}}, ""
}

// fireMixed makes the i-th turn of the mixed load without waiting for its
// answer; skips as fire does.
func (f *fleet) fireMixed(i int64) {
	sender, chat := f.plan.pick(i)
	lc := f.clients[sender]
	if lc.stalled.Load() || lc.inflight.Load() >= maxInflight {
		f.skipped.Add(1)
		return
	}
	o, upto := f.mix.choose(f.mix.weights.pick(rand.Float64()), sender, chat, f.body)
	chatID := f.plan.chats[chat].id
	f.dispatch(lc, func() {
		if o.submit == nil {
			f.mix.reads.Add(1)
			if err := lc.c.Read(f.sendCtx, chatID, upto); err != nil {
				f.mix.readFailures.Add(1)
			}
			return
		}
		n, cid := f.rec.beginKind(sender, chat, o.kind)
		acc, err := o.submit(f.sendCtx, lc.c, chatID, cid)
		f.rec.finish(sender, n, acc, err)
		if err == nil && o.kind == kindMessage {
			f.mix.targets[chat].add(sender, acc.ID)
		}
	})
}

// startTyping sends typing signals at TypingRate from random clients into
// one of their chats until the load stops.
func (f *fleet) startTyping() {
	if f.mix == nil || f.cfg.TypingRate <= 0 || f.cfg.Rate <= 0 {
		return
	}
	every := time.Duration(float64(time.Second) / f.cfg.TypingRate)
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		t := time.NewTicker(max(every, time.Millisecond))
		defer t.Stop()
		for {
			select {
			case <-f.loadStop:
				return
			case <-t.C:
			}
			lc := f.clients[rand.IntN(len(f.clients))]
			chats := f.plan.clientChats[lc.idx]
			if len(chats) == 0 || lc.stalled.Load() {
				continue
			}
			f.mix.typingSent.Add(1)
			if err := lc.c.Typing(f.sendCtx, f.plan.chats[chats[rand.IntN(len(chats))]].id); err != nil {
				f.mix.typingFailures.Add(1)
			}
		}
	}()
}
