// Command chatd is the chat backend: `chatd` serves; `chatd token USER`
// prints a token signed with the configured secret; `chatd help` prints the
// usage, and any other word is a usage error (exit 2). Every setting is a flag
// with an environment fallback; see `chatd --help`.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/chatd/chatd/internal/gcfloor"
	"github.com/chatd/chatd/internal/reexec"
	"github.com/chatd/chatd/internal/timerslack"
	"github.com/chatd/chatd/pkg/node"
)

func stderr() io.Writer { return os.Stderr }

func stdout() io.Writer { return os.Stdout }

func main() {
	err := run(os.Args[1:])
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(os.Stderr, "chatd:", oneLine(err))
	}
	os.Exit(exitCode(err))
}

// usageErr marks a command line chatd cannot read (an unknown flag, command
// or argument): run has printed the usage, and chatd exits 2, as the flag
// package's ExitOnError does, so a script can tell it from a failed start.
type usageErr struct{ err error }

func (e usageErr) Error() string { return e.err.Error() }
func (e usageErr) Unwrap() error { return e.err }

// exitCode is the process's exit status for run's error: 0 for none or
// --help, 2 for a usage error, 1 for anything else.
func exitCode(err error) int {
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, new(usageErr)):
		return 2
	default:
		return 1
	}
}

// parseArgs parses args into fs; a parse error (already printed with the
// usage by fs) is a usage error. What fs prints goes to stdout when it is
// the help asked for, so that `chatd --help | grep …` works, and to its
// output (stderr) with an error.
func parseArgs(fs *flag.FlagSet, args []string) error {
	var printed bytes.Buffer
	out := fs.Output()
	fs.SetOutput(&printed)
	err := fs.Parse(args)
	fs.SetOutput(out)
	if errors.Is(err, flag.ErrHelp) {
		out = stdout()
	}
	_, _ = printed.WriteTo(out)
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		return usageErr{err}
	}
	return err
}

// strayArg prints fs's usage for a positional argument chatd does not take
// and returns the error naming it.
func strayArg(fs *flag.FlagSet, arg string) error {
	fs.Usage()
	return usageErr{fmt.Errorf("unknown command or argument %q (chatd help lists them)", arg)}
}

// oneLine folds a multi-line error (pgx lists every address it tried on
// its own line) into one line, so the failure reads as one message in a
// terminal or a journal.
func oneLine(err error) string {
	return strings.Join(strings.Fields(err.Error()), " ")
}

func run(args []string) error {
	if len(args) > 0 && args[0] == "token" {
		return runToken(args[1:])
	}
	var s settings
	fs := flag.NewFlagSet("chatd", flag.ContinueOnError)
	f := registerFlags(fs, &s)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `Usage:
  chatd [flags]             serve
  chatd token USER [flags]  print a token for USER (chatd token --help)
  chatd help [token]        this help, or the token command's

Each flag has an environment variable beside it; a flag beats its variable,
which beats the --config file. More on each: docs/architecture.md, "Defaults".
`)
		printFlags(fs.Output(), fs, f.specs)
	}
	if err := parseArgs(fs, args); err != nil {
		return err
	}
	// Every setting is a flag, so a positional word is a typo or a
	// subcommand chatd lacks; serving anyway would ignore the flags after
	// it and create ./data.
	if fs.NArg() > 0 {
		if fs.Arg(0) != "help" {
			return strayArg(fs, fs.Arg(0))
		}
		if fs.Arg(1) == "token" {
			return runToken([]string{"--help"})
		}
		fs.SetOutput(stdout())
		fs.Usage()
		return nil
	}
	if s.version {
		fmt.Fprintln(stdout(), node.ReadBuildInfo())
		return nil
	}
	if err := finishSettings(fs, f, &s); err != nil {
		return err
	}
	log := newLogger(&s)
	s.node.Logger = log
	// Before anything starts: on success chatd runs again from the top.
	if err := reexec.Apply(reexec.Settings{TimerSlack: s.timerSlack, PollingMonitor: s.sysmonPoll}); err != nil {
		log.Warn("could not start the runtime with chatd's timer slack and monitor polling; chatd runs as it was started, which costs CPU",
			"timer_slack", s.timerSlack, "sysmon_poll", s.sysmonPoll, "err", err)
	}
	applyMaxProcs(s.maxProcs)
	floor := heapFloor(s.heapFloor, log)
	nofile, err := raiseFileLimit(log)
	if err != nil {
		return err
	}
	s.node.API.HTTP.MaxConnections = maxConnections(s.node.API.HTTP.MaxConnections, nofile)
	if uint64(s.node.API.HTTP.MaxConnections)+fileReserve > nofile {
		log.Warn("--max-connections leaves fewer than the reserve of the open-file limit for PostgreSQL, NATS and files",
			"max_connections", s.node.API.HTTP.MaxConnections, "open_file_limit", nofile, "reserve", fileReserve)
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	defer keepHeapFloor(ctx, floor)()
	defer shareCPUs(ctx, s.maxProcs, log)()
	start := time.Now()
	n, err := node.Start(ctx, s.node)
	if err != nil {
		return err
	}
	log.Info("started", "seconds", time.Since(start).Seconds(), "url", n.URL(), "procs", runtime.GOMAXPROCS(0),
		"max_connections", s.node.API.HTTP.MaxConnections, "timer_slack", currentSlack(), "sysmon_poll", reexec.MonitorPolls(),
		"token", "chatd token USER --data-dir "+s.node.DataDir)
	go func() {
		<-ctx.Done()
		// After the first signal the default action returns: a second
		// SIGINT or SIGTERM aborts a shutdown that hangs.
		stop()
	}()
	if s.node.TLSCertFile != "" {
		reloaded := reloadTLSOnHUP(ctx, n, log)
		defer func() { <-reloaded }()
	}
	return n.Run(ctx)
}

// currentSlack is this thread's timer slack for the start's log line, or
// "unknown" where it cannot be read.
func currentSlack() string {
	d, err := timerslack.Current()
	if err != nil {
		return "unknown"
	}
	return d.String()
}

// applyMaxProcs sets GOMAXPROCS from --max-procs; 0 leaves Go's choice.
func applyMaxProcs(n int) {
	if n > 0 {
		runtime.GOMAXPROCS(n)
	}
}

// heapFloor returns the floor to keep from --heap-floor-bytes (never
// negative: checkNotNegative refused that): none when the GOGC variable is
// set, since whoever set it chose the collector's pace.
func heapFloor(floor int64, log *slog.Logger) uint64 {
	if floor > 0 && os.Getenv("GOGC") != "" {
		log.Info("GOGC is set, so --heap-floor-bytes is ignored", "gogc", os.Getenv("GOGC"))
		return 0
	}
	return uint64(floor)
}

// keepHeapFloor runs gcfloor until ctx ends or the returned stop is
// called; stop returns once GOGC is given back.
func keepHeapFloor(ctx context.Context, floor uint64) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		gcfloor.Run(ctx, floor)
	}()
	return func() { cancel(); <-done }
}

// tlsReloader is what SIGHUP reloads (*node.Node).
type tlsReloader interface{ ReloadTLS() error }

// reloadTLSOnHUP reloads the node's TLS certificate on every SIGHUP until
// ctx ends; the returned channel closes when its goroutine has stopped.
// Only a node serving TLS catches SIGHUP: elsewhere it keeps its default
// meaning (terminate), as before.
func reloadTLSOnHUP(ctx context.Context, n tlsReloader, log *slog.Logger) <-chan struct{} {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer signal.Stop(hup)
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				if err := n.ReloadTLS(); err != nil {
					log.Error("TLS certificate not reloaded; the previous one stays in use", "err", err)
				} else {
					log.Info("TLS certificate reloaded")
				}
			}
		}
	}()
	return done
}
