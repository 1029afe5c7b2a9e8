// Command chatd is the chat backend: `chatd` serves; `chatd token USER`
// prints a token signed with the configured secret. Every setting is a flag
// with an environment fallback; see `chatd --help`.
package main

import (
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

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/pkg/api"
	"github.com/chatd/chatd/pkg/node"
)

func stderr() io.Writer { return os.Stderr }

func stdout() io.Writer { return os.Stdout }

func main() {
	err := run(os.Args[1:])
	switch {
	case errors.Is(err, flag.ErrHelp):
		os.Exit(0)
	case err != nil:
		fmt.Fprintln(os.Stderr, "chatd:", oneLine(err))
		os.Exit(1)
	}
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
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage:\n  chatd [flags]                 serve\n  chatd token USER [--device D] [--ttl 24h] [flags]   print a token\n\nFlags:\n")
		fs.PrintDefaults()
	}
	f := registerFlags(fs, &s)
	version := fs.Bool("version", false, "print the module version and VCS revision, and exit")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *version {
		fmt.Fprintln(stdout(), node.ReadBuildInfo())
		return nil
	}
	if err := finishSettings(fs, f, &s); err != nil {
		return err
	}
	log := newLogger(&s)
	s.node.Logger = log
	if err := applyMaxProcs(s.maxProcs); err != nil {
		return err
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	start := time.Now()
	n, err := node.Start(ctx, s.node)
	if err != nil {
		return err
	}
	log.Info("started", "seconds", time.Since(start).Seconds(), "url", n.URL(), "procs", runtime.GOMAXPROCS(0),
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

// applyMaxProcs sets GOMAXPROCS from --max-procs; 0 leaves Go's choice.
func applyMaxProcs(n int) error {
	if n < 0 {
		return fmt.Errorf("--max-procs %d: want 0 (Go's choice) or a number of CPUs", n)
	}
	if n > 0 {
		runtime.GOMAXPROCS(n)
	}
	return nil
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

// runToken prints a token for USER signed with the secret chatd would use.
func runToken(args []string) error {
	var s settings
	var device string
	var ttl time.Duration
	fs := flag.NewFlagSet("chatd token", flag.ContinueOnError)
	f := registerFlags(fs, &s)
	fs.StringVar(&device, "device", chatd.DefaultDevice, "device id (the token's dev claim)")
	fs.DurationVar(&ttl, "ttl", 24*time.Hour, "token lifetime")
	user, rest := "", args
	if len(args) > 0 && args[0] != "" && args[0][0] != '-' {
		user, rest = args[0], args[1:]
	}
	if err := fs.Parse(rest); err != nil {
		return err
	}
	if err := finishSettings(fs, f, &s); err != nil {
		return err
	}
	if user == "" && fs.NArg() > 0 {
		user = fs.Arg(0)
	}
	if !chatd.ValidUserID(user) {
		return fmt.Errorf("usage: chatd token USER [--device D] [--ttl 24h]: USER must be 1-64 chars of [A-Za-z0-9_-], got %q", user)
	}
	secret, err := node.JWTSecret(s.node)
	if err != nil {
		return err
	}
	tok, err := api.IssueToken(secret, user, device, ttl)
	if err != nil {
		return err
	}
	fmt.Println(tok)
	return nil
}
