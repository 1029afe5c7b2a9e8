package ingest_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/internal/testmetric"
	"github.com/chatd/chatd/pkg/ingest"
	"github.com/chatd/chatd/pkg/store"
	"github.com/prometheus/client_golang/prometheus"
)

// entryWatch is the real store that reports each batch as it enters
// CommitBatch, so a test knows a batch is inside its transaction.
type entryWatch struct {
	*store.Store
	entered chan []string // the cids of each batch entering CommitBatch
}

func (w *entryWatch) CommitBatch(ctx context.Context, sends []store.Send) ([]store.Outcome, error) {
	cids := make([]string, len(sends))
	for i, s := range sends {
		cids[i] = s.CID
	}
	select {
	case w.entered <- cids:
	default: // nobody listening any more
	}
	return w.Store.CommitBatch(ctx, sends)
}

// mustLockChat holds chat's row lock in another transaction, so every batch
// with that chat hangs in CommitBatch (its first transaction leaves the chat
// out, the second waits for the lock to allocate seqs) until the returned
// release is called (also at cleanup).
func mustLockChat(t *testing.T, s *store.Store, chat string) (release func()) {
	t.Helper()
	ctx := context.Background()
	tx, err := s.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `SELECT 1 FROM chats WHERE id = $1 FOR UPDATE`, chat); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	release = func() { once.Do(func() { _ = tx.Rollback(ctx) }) }
	t.Cleanup(release)
	return release
}

// queueDepth reads chatd_ingest_queue_depth from reg.
func queueDepth(t *testing.T, reg *prometheus.Registry) float64 {
	t.Helper()
	return testmetric.Value(t, reg, "chatd_ingest_queue_depth")
}

// With a commit that hangs (another transaction holds its chat's row), the
// sends ingest holds (the queue, the dispatcher's per-chat queues and the
// hung batch) never exceed QueueSize: offered load beyond it is refused
// overloaded at once, and the queue depth metric shows all of it. Once the
// commit goes through, every send that was taken is accepted.
func TestHungCommitRefusesSendsOverTheBound(t *testing.T) {
	const bound, offered = 40, 1000
	s := mustStore(t)
	chat := mustGroup(t, s, "alice", "bob")
	reg := prometheus.NewRegistry()
	w := &entryWatch{Store: s, entered: make(chan []string, 1)}
	in := mustIngest(t, w, func(c *ingest.Config) {
		c.QueueSize, c.Workers, c.BatchSize, c.BatchDelay = bound, 2, 8, time.Millisecond
		c.CommitTimeout = time.Minute
		c.Registerer = reg
	})
	release := mustLockChat(t, s, chat) // after mustIngest: its cleanup, draining, runs after the release

	var answered sync.WaitGroup
	var failed atomic.Int32
	taken, refused := 0, 0
	for i := 0; i < offered; i++ {
		req := chatd.SendRequest{Chat: chat, From: "alice", Device: "d", CID: fmt.Sprint("k", i), Body: "x"}
		answered.Add(1)
		err := in.Submit(req, func(r chatd.SendResult) {
			if r.Err != nil {
				failed.Add(1)
			}
			answered.Done()
		})
		switch {
		case err == nil:
			taken++
		case errors.Is(err, chatd.ErrOverloaded):
			answered.Done()
			refused++
		default:
			t.Fatalf("send %d: got %v, want nil or ErrOverloaded", i, err)
		}
		if i == 0 {
			<-w.entered // the first batch hangs in CommitBatch before the rest come
		}
		runtime.Gosched() // give the dispatcher every chance to move sends out of the queue
	}
	if taken != bound || refused != offered-bound {
		t.Fatalf("behind a hung commit Submit took %d and refused %d of %d sends, want %d taken (QueueSize) and the rest refused overloaded",
			taken, refused, offered, bound)
	}
	if d := queueDepth(t, reg); d != bound {
		t.Fatalf("queue depth %v while the commit hangs, want %d (every send held)", d, bound)
	}
	release()
	answered.Wait()
	if n := failed.Load(); n > 0 {
		t.Fatalf("%d taken sends failed after the commit went through, want 0", n)
	}
	if h := count(t, s, "history"); h != taken {
		t.Fatalf("history holds %d messages, want %d (the sends taken)", h, taken)
	}
	if d := queueDepth(t, reg); d != 0 {
		t.Fatalf("queue depth %v after every send was answered, want 0", d)
	}
}

// doneWatch is a context that reports when Done is first asked for: Send
// asks once its send is queued and it starts waiting for the answer.
type doneWatch struct {
	context.Context
	once   sync.Once
	asking chan struct{}
}

func newDoneWatch(ctx context.Context) *doneWatch {
	return &doneWatch{Context: ctx, asking: make(chan struct{})}
}

func (c *doneWatch) Done() <-chan struct{} {
	c.once.Do(func() { close(c.asking) })
	return c.Context.Done()
}

// A Send whose caller gives up (its context ends, as a REST request's store
// timeout does) while its send waits behind a hung commit is answered with
// an error, and that send is never stored afterwards. A send whose caller
// gives up while its own batch is committing cannot be recalled: its answer
// must say the outcome is unknown. Resends with the same cids then tell the
// truth.
func TestSendGivenUpIsNeverStoredAfterwards(t *testing.T) {
	s := mustStore(t)
	chat := mustGroup(t, s, "alice", "bob")
	w := &entryWatch{Store: s, entered: make(chan []string, 1)}
	in := mustIngest(t, w, func(c *ingest.Config) {
		c.Workers, c.BatchDelay, c.CommitTimeout = 2, time.Millisecond, time.Minute
	})
	release := mustLockChat(t, s, chat)
	ctx := ctxT(t, 30*time.Second)
	req := func(cid string) chatd.SendRequest {
		return chatd.SendRequest{Chat: chat, From: "alice", Device: "d", CID: cid, Body: cid}
	}
	send := func(ctx context.Context, cid string) <-chan error {
		errc := make(chan error, 1)
		go func() {
			r, err := in.Send(ctx, req(cid))
			if err == nil {
				err = r.Err
			}
			errc <- err
		}()
		return errc
	}

	// "committing" is inside the hung transaction when its caller gives up.
	committingCtx, giveUpCommitting := context.WithCancel(ctx)
	committing := send(committingCtx, "committing")
	if got := <-w.entered; len(got) != 1 || got[0] != "committing" {
		t.Fatalf("first batch %v, want [committing]", got)
	}
	// "waiting" is queued behind it (same chat) when its caller gives up.
	waitingCtx, giveUpWaiting := context.WithCancel(ctx)
	watch := newDoneWatch(waitingCtx)
	waiting := send(watch, "waiting")
	<-watch.asking
	giveUpWaiting()
	giveUpCommitting()
	errWaiting, errCommitting := <-waiting, <-committing
	if errWaiting == nil || errCommitting == nil {
		t.Fatalf("sends whose callers gave up answered %v and %v, want errors", errWaiting, errCommitting)
	}
	if !errors.Is(errWaiting, chatd.ErrUnavailable) || outcomeUnknown(errWaiting) {
		t.Fatalf("send given up before its batch began answered %q, want ErrUnavailable (nothing stored)", errWaiting)
	}
	if !outcomeUnknown(errCommitting) {
		t.Fatalf("send given up inside its transaction answered %q, want ErrOutcomeUnknown", errCommitting)
	}

	release()
	// A chat's sends commit in submission order: once this one is answered,
	// "waiting" was committed or dropped.
	if _, err := in.Send(ctx, req("last")); err != nil {
		t.Fatal(err)
	}
	stored := storedCIDs(t, s, chat)
	if stored["waiting"] {
		t.Fatalf("send answered %q before its batch began was committed afterwards", errWaiting)
	}
	if stored["committing"] && !outcomeUnknown(errCommitting) {
		t.Fatalf("send answered %q while its batch committed was stored, and the answer did not say the outcome is unknown", errCommitting)
	}
	// The answers' advice, resend with the same cid, gives the truth.
	for cid, wantDup := range map[string]bool{"waiting": false, "committing": stored["committing"]} {
		r, err := in.Send(ctx, req(cid))
		if err != nil || r.Err != nil || r.Duplicate != wantDup {
			t.Fatalf("resend %s: got %v %+v, want accepted with duplicate %v", cid, err, r, wantDup)
		}
	}
}

// storedCIDs is the set of cids in chat's history.
func storedCIDs(t *testing.T, s *store.Store, chat string) map[string]bool {
	t.Helper()
	msgs, _, err := s.History(context.Background(), chat, chatd.HistoryQuery{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string]bool, len(msgs))
	for _, m := range msgs {
		out[m.CID] = true
	}
	return out
}

// outcomeUnknown reports an answer that says the send may have been stored.
func outcomeUnknown(err error) bool { return errors.Is(err, chatd.ErrOutcomeUnknown) }
