package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chatd/chatd/pkg/client"
)

// maxInflight bounds one client's sends awaiting an answer; it matches
// chatd's default credits, past which a send would only queue in the SDK.
const maxInflight = 64

// loadClient is one simulated user: an SDK client, the goroutine that
// consumes its events into the recorder, and its fault role.
type loadClient struct {
	idx     int
	c       *client.Client
	proxy   *dropProxy // set for a client that drops its connection
	stalls  bool       // set for a client that stops acking at times
	stalled atomic.Bool

	highSeq   atomic.Int64 // the highest seq handed to it in its first chat, for audits
	inflight  atomic.Int64
	jobs      chan func()   // hands a send to an idle send worker; closed by closeJobs
	connected chan struct{} // closed at its first hello
	connOnce  sync.Once
	done      chan struct{} // closed when Run has returned
	runErr    error         // why Run returned, if it failed; read after done
}

// fleet owns every load client and the goroutines that drive them.
type fleet struct {
	cfg     *Config
	plan    *plan
	rec     *recorder
	clients []*loadClient
	body    string
	// http makes every client's REST calls (history, reads) through one
	// pool of connections, as an app's backend or a browser per origin
	// would. A transport per client kept an idle connection per client
	// beside its WebSocket: with 10,000 group members that was 20,000
	// sockets, over chatd's --max-connections and the open-file limit.
	http *http.Client

	loadStop chan struct{} // closed when the load stops: stalls end, drops stop
	stopOnce sync.Once
	cancel   context.CancelFunc
	wg       sync.WaitGroup // Run, consumer and dropper goroutines

	sendCtx    context.Context // outlives the load so stalled sends can finish
	sendCancel context.CancelFunc
	sends      sync.WaitGroup // one per send fired and not yet answered
	workers    sync.WaitGroup // send workers; they end when closeJobs closes their client's jobs
	jobsOnce   sync.Once

	skipped, drops, stallsBegun atomic.Int64

	mix *mixState // the mixed scenario's state; nil in the others
	app appStats
}

// newFleet creates the clients (not yet connected). A shuffled permutation
// picks the stalling and the dropping clients, disjoint sets.
func newFleet(cfg *Config, p *plan, rec *recorder, t *target) (*fleet, error) {
	f := &fleet{cfg: cfg, plan: p, rec: rec, loadStop: make(chan struct{}), body: strings.Repeat("x", cfg.BodyBytes), http: sharedHTTP()}
	f.sendCtx, f.sendCancel = context.WithCancel(context.Background())
	if cfg.Scenario == scenarioMixed {
		f.mix = newMixState(cfg, p)
	}
	n := len(p.users)
	nStall := int(float64(n)*cfg.StallPct/100 + 0.5)
	nDrop := min(int(float64(n)*cfg.DropPct/100+0.5), n-nStall)
	perm := rand.Perm(n)
	role := make([]byte, n)
	for _, i := range perm[:nStall] {
		role[i] = 's'
	}
	for _, i := range perm[nStall : nStall+nDrop] {
		role[i] = 'd'
	}
	for i, user := range p.users {
		lc, err := f.newClient(i, user, role[i], t)
		if err != nil {
			f.closeProxies()
			return nil, err
		}
		f.clients = append(f.clients, lc)
	}
	rec.faulty = make([]bool, n)
	for i := range rec.faulty {
		rec.faulty[i] = role[i] != 0
	}
	return f, nil
}

func (f *fleet) newClient(i int, user string, role byte, t *target) (*loadClient, error) {
	tok, err := t.token(user)
	if err != nil {
		return nil, fmt.Errorf("token for %s: %w", user, err)
	}
	lc := &loadClient{idx: i, jobs: make(chan func()), connected: make(chan struct{}), done: make(chan struct{}), stalls: role == 's'}
	// EventBuffer: each client's events are recorded by a goroutine of its
	// own as they come, so sixteen (ReadAhead's default) absorb a burst. The SDK's default
	// of 1024 (448 bytes each, holding pointers) made 10,000 clients' event
	// channels 4.6 GB that every GC cycle scanned: a quarter of chatload's
	// CPU in groups 200 x 50.
	ccfg := client.Config{URL: t.clientURL(i), URLs: t.fallbackURLs(i), Token: tok, Logger: f.cfg.Logger, HTTPClient: f.http, EventBuffer: f.cfg.ReadAhead,
		AckDelay: cmp.Or(f.cfg.AckDelay, -1)}
	if lc.stalls {
		// A one-event buffer makes a stalled consumer stop the SDK's
		// reading, and so its acks, at once instead of after 1024 events.
		ccfg.EventBuffer = 1
	}
	if role == 'd' {
		if lc.proxy, err = newDropProxy(ccfg.URL); err != nil {
			return nil, err
		}
		ccfg.URL = lc.proxy.URL()
		// A drop is aimed at one node through its proxy; a client that
		// moved on to another node would escape its drops.
		ccfg.URLs = nil
	}
	if lc.c, err = client.New(ccfg); err != nil {
		return nil, fmt.Errorf("client %s: %w", user, err)
	}
	return lc, nil
}

// track tells every client the chats it belongs to, once they exist.
func (f *fleet) track() {
	for _, lc := range f.clients {
		for _, ci := range f.plan.clientChats[lc.idx] {
			lc.c.Track(f.plan.chats[ci].id)
		}
	}
}

// connect starts every client at no more than ConnectRate per second and
// waits until each has had its hello.
func (f *fleet) connect(ctx context.Context) error {
	rctx, cancel := context.WithCancel(context.Background())
	f.cancel = cancel
	gap := time.Second / time.Duration(max(f.cfg.ConnectRate, 1))
	for _, lc := range f.clients {
		f.wg.Add(2)
		go f.run(rctx, lc)
		go f.consume(lc)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(gap):
		}
	}
	for _, lc := range f.clients {
		select {
		case <-lc.connected:
		case <-lc.done:
			return fmt.Errorf("client %s stopped before connecting: %w", f.plan.users[lc.idx], lc.runErr)
		case <-ctx.Done():
			return fmt.Errorf("waiting for connections: %w", ctx.Err())
		}
	}
	return nil
}

func (f *fleet) run(ctx context.Context, lc *loadClient) {
	defer f.wg.Done()
	defer close(lc.done)
	if err := lc.c.Run(ctx); err != nil {
		lc.runErr = err
		f.cfg.Logger.Error("client stopped", "user", f.plan.users[lc.idx], "err", err)
	}
}

// consume hands the client's events to the recorder. A stalling client
// stops reading them for StallFor at random times until the load stops.
func (f *fleet) consume(lc *loadClient) {
	defer f.wg.Done()
	events := lc.c.Events()
	var nextStall <-chan time.Time
	if lc.stalls {
		nextStall = time.After(jitter(f.cfg.StallFor))
	}
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				return
			}
			f.handle(lc, ev)
		case <-nextStall:
			nextStall = nil
			if f.stall(lc) {
				nextStall = time.After(jitter(f.cfg.StallFor))
			}
		}
	}
}

// stall stops consuming for StallFor or until the load stops, and reports
// whether the load is still running.
func (f *fleet) stall(lc *loadClient) bool {
	select {
	case <-f.loadStop:
		return false
	default:
	}
	f.stallsBegun.Add(1)
	lc.stalled.Store(true)
	defer lc.stalled.Store(false)
	select {
	case <-time.After(f.cfg.StallFor):
		return true
	case <-f.loadStop:
		return false
	}
}

func (f *fleet) handle(lc *loadClient, ev client.Event) {
	switch ev.Kind {
	case client.EventMessage:
		f.rec.deliver(lc.idx, ev.Message, ev.Via, time.Now())
		process(f.cfg.ProcessCost)
		if chats := f.plan.clientChats[lc.idx]; f.cfg.AuditEvery > 0 && len(chats) > 0 && ev.Message.Chat == f.plan.chats[chats[0]].id {
			lc.noteSeq(ev.Message.Seq)
		}
		if f.mix != nil {
			f.mix.derived[lc.idx].apply(ev.Message)
		}
	case client.EventReceipt:
		if f.mix != nil {
			f.mix.receipts.Add(1)
		}
	case client.EventTyping:
		if f.mix != nil {
			f.mix.typingRecv.Add(1)
		}
	case client.EventState:
		if ev.State.Connected {
			lc.connOnce.Do(func() { close(lc.connected) })
		}
	}
}

// every runs fn about every period (jittered, so clients do not act in
// step) on a goroutine of the fleet's, until the load stops.
func (f *fleet) every(period time.Duration, fn func()) {
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		for {
			select {
			case <-f.loadStop:
				return
			case <-time.After(jitter(period)):
			}
			fn()
		}
	}()
}

// startDrops runs a dropper per dropping client until the load stops.
func (f *fleet) startDrops() {
	for _, lc := range f.clients {
		if lc.proxy == nil {
			continue
		}
		f.every(f.cfg.DropEvery, func() { f.drops.Add(int64(lc.proxy.drop())) })
	}
}

// jitter returns d scaled by a uniform factor in [0.5, 1.5).
func jitter(d time.Duration) time.Duration {
	return time.Duration(float64(d) * (0.5 + rand.Float64()))
}

// fire makes the i-th send of the load without waiting for its answer. A
// stalled sender (a stuck app does not send) or one with maxInflight sends
// outstanding skips its turn, counted.
func (f *fleet) fire(i int64) {
	if f.mix != nil {
		f.fireMixed(i)
		return
	}
	sender, chat := f.plan.pick(i)
	lc := f.clients[sender]
	if lc.stalled.Load() || lc.inflight.Load() >= maxInflight {
		f.skipped.Add(1)
		return
	}
	f.dispatch(lc, func() {
		n, cid := f.rec.begin(sender, chat)
		acc, err := lc.c.SendCID(f.sendCtx, f.plan.chats[chat].id, cid, f.body)
		f.rec.finish(sender, n, acc, err)
	})
}

// dispatch runs send on an idle send worker of lc, or on a new one when all
// are busy. Workers outlive their send and wait for the next: a goroutine
// per send spent more of chatload's CPU on creating goroutines and growing
// their stacks (through the WebSocket write path) than on the send itself.
// There are at most maxInflight workers per client, as there are at most
// that many sends in flight.
func (f *fleet) dispatch(lc *loadClient, send func()) {
	lc.inflight.Add(1)
	f.sends.Add(1)
	select {
	case lc.jobs <- send:
	default:
		f.workers.Add(1)
		go f.sendWorker(lc, send)
	}
}

// sendWorker runs send, then every send handed to it, until lc's jobs close.
func (f *fleet) sendWorker(lc *loadClient, send func()) {
	defer f.workers.Done()
	for ok := true; ok; send, ok = <-lc.jobs {
		send()
		lc.inflight.Add(-1)
		f.sends.Done()
	}
}

// closeJobs ends every idle send worker; fire must not be called after it.
func (f *fleet) closeJobs() {
	f.jobsOnce.Do(func() {
		for _, lc := range f.clients {
			close(lc.jobs)
		}
	})
}

// stopLoad ends stalls and drops; sends already made keep going.
func (f *fleet) stopLoad() { f.stopOnce.Do(func() { close(f.loadStop) }) }

// awaitSends waits for every send's answer until ctx ends, then gives up
// on the rest (their outcome is recorded as unknown).
func (f *fleet) awaitSends(ctx context.Context) {
	done := make(chan struct{})
	go func() {
		f.sends.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		f.sendCancel()
		<-done
	}
}

// stats sums the SDK counters of every client.
func (f *fleet) stats() client.Stats {
	sum := client.Stats{Rejects: map[string]int64{}, Disconnects: map[int]int64{}}
	for _, lc := range f.clients {
		s := lc.c.Stats()
		sum.MsgFrames += s.MsgFrames
		sum.DuplicateFrames += s.DuplicateFrames
		sum.DeliveredLive += s.DeliveredLive
		sum.DeliveredHistory += s.DeliveredHistory
		sum.HistoryPages += s.HistoryPages
		sum.HistoryDuplicates += s.HistoryDuplicates
		sum.SkippedSeqs += s.SkippedSeqs
		sum.Resends += s.Resends
		sum.Connects += s.Connects
		sum.DialFailures += s.DialFailures
		sum.Held += s.Held
		for k, v := range s.Rejects {
			sum.Rejects[k] += v
		}
		for k, v := range s.Disconnects {
			sum.Disconnects[k] += v
		}
	}
	return sum
}

// shutdown stops every client and waits for all fleet goroutines.
func (f *fleet) shutdown() error {
	f.stopLoad()
	f.sendCancel()
	f.sends.Wait()
	f.closeJobs()
	f.workers.Wait()
	if f.cancel != nil {
		f.cancel()
	} else {
		for _, lc := range f.clients {
			lc.c.Close()
		}
	}
	f.wg.Wait()
	f.closeProxies()
	var errs []error
	for _, lc := range f.clients {
		if lc.runErr != nil && !errors.Is(lc.runErr, context.Canceled) {
			errs = append(errs, lc.runErr)
		}
	}
	return errors.Join(errs...)
}

func (f *fleet) closeProxies() {
	for _, lc := range f.clients {
		if lc.proxy != nil {
			lc.proxy.Close()
		}
	}
}

// sharedHTTP is the clients' REST pool: up to 256 connections per node.
func sharedHTTP() *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns, tr.MaxIdleConnsPerHost, tr.MaxConnsPerHost = 256, 256, 256
	return &http.Client{Timeout: 30 * time.Second, Transport: tr}
}
