package main

import (
	"context"
	"fmt"
	"strconv"

	"github.com/chatd/chatd/pkg/client"
	"golang.org/x/sync/errgroup"
)

// plan is a scenario's shape: who the clients are, which chats exist with
// which members, and which client sends the i-th message. It is built
// before the load and read-only during it.
type plan struct {
	scenario    string
	spread      bool      // pairs: partners send half a round apart (Config.PairsOrder)
	users       []string  // client i's user id
	chats       []chatRef // chat index → id and members
	chatIdx     map[string]int32
	clientChats [][]int32 // the chats of each client
}

type chatRef struct {
	id      string
	members []int // client indexes, the creator first
}

// newPlan lays out the scenario for cfg; users are prefixed with the run id
// so repeated runs against one server never share a chat or a history.
func newPlan(cfg *Config, runID string) *plan {
	p := &plan{scenario: cfg.Scenario, spread: cfg.PairsOrder != pairsCrossing, chatIdx: make(map[string]int32)}
	n := cfg.goodClients()
	p.users = make([]string, n)
	for i := range p.users {
		p.users[i] = "L" + runID + "-" + strconv.Itoa(i)
	}
	p.clientChats = make([][]int32, n)
	switch cfg.Scenario {
	case scenarioPairs:
		for i := 0; i+1 < n; i += 2 {
			p.addChat([]int{i, i + 1})
		}
	case scenarioGroups, scenarioMixed:
		// Member j of group g is client (g·K+j) mod N: distinct within a
		// group (K ≤ N), and with fewer clients than memberships each
		// client joins about G·K/N groups.
		for g := range cfg.Groups {
			members := make([]int, cfg.Members)
			for j := range members {
				members[j] = (g*cfg.Members + j) % n
			}
			p.addChat(members)
		}
	}
	return p
}

func (p *plan) addChat(members []int) {
	c := int32(len(p.chats))
	p.chats = append(p.chats, chatRef{members: members})
	for _, m := range members {
		p.clientChats[m] = append(p.clientChats[m], c)
	}
}

// pick names the sender and chat of the i-th message. Pairs rotate over
// every client (each writes to its partner) in the order of
// Config.PairsOrder; groups rotate over the groups and, within each, over
// its members, so senders are spread evenly.
func (p *plan) pick(i int64) (sender int, chat int32) {
	switch p.scenario {
	case scenarioGroups, scenarioMixed:
		g := i % int64(len(p.chats))
		members := p.chats[g].members
		return members[(i/int64(len(p.chats)))%int64(len(members))], int32(g)
	default:
		n := int64(len(p.users)) // even: the pairs' members
		s := i % n
		if p.spread && n%2 == 0 {
			// The first members of every pair, then the second members:
			// a pair's sends come half a round apart, as turns of a
			// conversation do, rather than back to back.
			if half := n / 2; s < half {
				s *= 2
			} else {
				s = 2*(s-half) + 1
			}
		}
		return int(s), p.clientChats[s][0]
	}
}

// recipients is the number of deliveries one message of chat is owed: every
// member but the sending client.
func (p *plan) recipients(chat int32) int { return len(p.chats[chat].members) - 1 }

// createChats creates every chat over REST through its first member's
// client, a few at a time, and records the ids.
func (p *plan) createChats(ctx context.Context, clients []*client.Client) error {
	ids := make([]string, len(p.chats))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	for ci, ch := range p.chats {
		g.Go(func() error {
			owner := clients[ch.members[0]]
			if p.scenario == scenarioPairs {
				c, err := owner.Direct(gctx, p.users[ch.members[1]])
				if err != nil {
					return fmt.Errorf("create direct chat %d: %w", ci, err)
				}
				ids[ci] = c.ID
				return nil
			}
			others := make([]string, 0, len(ch.members)-1)
			for _, m := range ch.members[1:] {
				others = append(others, p.users[m])
			}
			c, err := owner.CreateGroup(gctx, "load "+strconv.Itoa(ci), others)
			if err != nil {
				return fmt.Errorf("create group %d: %w", ci, err)
			}
			ids[ci] = c.ID
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	for ci, id := range ids {
		p.chats[ci].id = id
		p.chatIdx[id] = int32(ci)
	}
	return nil
}
