package embedded

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"syscall"
	"time"
)

const (
	// restartMinBackoff and restartMaxBackoff bound the wait before
	// restarting a postgres that exited on its own.
	restartMinBackoff = 100 * time.Millisecond
	restartMaxBackoff = 10 * time.Second
	// healthyRun is how long a child must have run for the backoff to reset.
	healthyRun = 30 * time.Second
	// logDrainWait bounds the wait for the last log lines of a child that
	// failed to start.
	logDrainWait = 2 * time.Second
)

// supervisor runs one postgres child at a time and restarts it with backoff
// when it exits on its own after having been ready. It lives from start to
// stop of the managed server; Restart makes a new one.
type supervisor struct {
	newCmd func() *exec.Cmd
	ping   func(context.Context) error // nil error once the server answers
	log    *slog.Logger
	srvLog *serverLog

	ready   chan struct{} // closed by markReady once the first child answers
	readyMu sync.Once
	done    chan struct{} // closed when run returns
	err     error         // why run returned early; read after done

	stopOnce sync.Once
	stopCh   chan struct{} // closed by stop

	mu       sync.Mutex
	stopping bool        // set with stopCh, under mu so startChild sees it
	proc     *os.Process // the current child, nil between children
}

func newSupervisor(newCmd func() *exec.Cmd, ping func(context.Context) error, log *slog.Logger, srvLog *serverLog) *supervisor {
	return &supervisor{
		newCmd: newCmd,
		ping:   ping,
		log:    log,
		srvLog: srvLog,
		ready:  make(chan struct{}),
		done:   make(chan struct{}),
		stopCh: make(chan struct{}),
	}
}

func (s *supervisor) markReady() { s.readyMu.Do(func() { close(s.ready) }) }

func (s *supervisor) isReady() bool {
	select {
	case <-s.ready:
		return true
	default:
		return false
	}
}

// outage is the supervisor's account of a crash and the restarts after
// it, so that a restart logs as a restart (attempt, downtime) and an
// operator can tell a crash loop from a start.
type outage struct {
	attempt int       // restarts since the last healthy run (healthyRun); 0: none yet
	since   time.Time // when the last child that had answered exited
}

// run starts children until stop is called, or until the first child exits
// before it was ready (then s.err says why). It must run on its own
// goroutine.
//
// The goroutine holds its OS thread for its whole life: the kernel sends a
// child's parent-death signal when the thread that forked it exits, not the
// process, and Go otherwise moves goroutines between threads and retires
// idle ones. The thread is never unlocked, so Go discards it when run
// returns, by which time no child is left.
func (s *supervisor) run() {
	runtime.LockOSThread()
	defer close(s.done)
	var logs, watchers sync.WaitGroup
	defer logs.Wait()
	defer watchers.Wait()

	backoff := restartMinBackoff
	var down outage
	for {
		began := time.Now()
		cmd, logDone, err := s.startChild(&logs)
		if err != nil && (!s.isReady() || errors.Is(err, errStopping)) {
			s.err = err
			return
		}
		msg := "start postgres failed; retrying"
		if err == nil {
			up, cancelWatch := s.watchRestart(&watchers, down)
			err = cmd.Wait()
			cancelWatch()
			s.setProc(nil)
			if s.isStopping() {
				return
			}
			if !s.isReady() {
				select {
				case <-logDone:
				case <-time.After(logDrainWait):
				}
				s.err = fmt.Errorf("postgres exited during startup (%v): %s", err, s.srvLog.lastLines())
				return
			}
			if wasUp(up) {
				down.since = time.Now() // the server is down from here
			}
			msg = "postgres exited unexpectedly; restarting"
		}
		if time.Since(began) > healthyRun {
			backoff = restartMinBackoff
			down.attempt = 0
		}
		down.attempt++
		s.log.Error(msg, "err", err, "backoff", backoff, "attempt", down.attempt)
		if !s.sleep(backoff) {
			return
		}
		backoff = min(backoff*2, restartMaxBackoff)
	}
}

// watchRestart, for a child started after a crash (down.attempt > 0),
// polls it until it answers and then logs "postgres restarted" with the
// attempt number and how long the server was down. The returned channel is
// closed once the child answered (the first child's readiness is the
// start's own, so it is returned closed); cancel stops the watch when the
// child exits. wg tracks the watch goroutine.
func (s *supervisor) watchRestart(wg *sync.WaitGroup, down outage) (up <-chan struct{}, cancel func()) {
	upCh := make(chan struct{})
	if down.attempt == 0 {
		close(upCh)
		return upCh, func() {}
	}
	ctx, cancel := context.WithCancel(context.Background())
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(pingInterval)
		defer tick.Stop()
		for s.ping(ctx) != nil {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
		close(upCh)
		s.log.Info("postgres restarted", "attempt", down.attempt, "down", time.Since(down.since).Round(time.Millisecond))
	}()
	return upCh, cancel
}

// wasUp reports whether a child's up channel from watchRestart is closed.
func wasUp(up <-chan struct{}) bool {
	select {
	case <-up:
		return true
	default:
		return false
	}
}

var errStopping = errors.New("postgres is stopping")

// startChild starts one postgres with its stderr piped into the server log.
// It holds mu across Start so that stop either sees the new process or
// prevents it from starting.
func (s *supervisor) startChild(logs *sync.WaitGroup) (*exec.Cmd, <-chan struct{}, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, nil, fmt.Errorf("start postgres: %w", err)
	}
	cmd := s.newCmd()
	cmd.Stdout, cmd.Stderr = w, w

	s.mu.Lock()
	if s.stopping {
		s.mu.Unlock()
		r.Close()
		w.Close()
		return nil, nil, errStopping
	}
	err = cmd.Start()
	if err == nil {
		s.proc = cmd.Process
	}
	s.mu.Unlock()
	w.Close() // the child holds its own copy; EOF comes when it is gone
	if err != nil {
		r.Close()
		return nil, nil, fmt.Errorf("start postgres: %w", err)
	}

	logDone := make(chan struct{})
	logs.Add(1)
	go func() {
		defer logs.Done()
		defer close(logDone)
		defer r.Close()
		s.srvLog.copy(r)
	}()
	return cmd, logDone, nil
}

func (s *supervisor) setProc(p *os.Process) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.proc = p
}

func (s *supervisor) isStopping() bool {
	select {
	case <-s.stopCh:
		return true
	default:
		return false
	}
}

// sleep waits d, or returns false as soon as stop is called.
func (s *supervisor) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-s.stopCh:
		return false
	}
}

// stop marks the supervisor as stopping, so no further child starts, and
// sends sig to the current child, if any. It may be called repeatedly to
// escalate the signal.
func (s *supervisor) stop(sig syscall.Signal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopping = true
	s.stopOnce.Do(func() { close(s.stopCh) })
	if s.proc != nil {
		_ = s.proc.Signal(sig)
	}
}
