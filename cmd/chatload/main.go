// Command chatload drives chatd with many SDK clients and reconciles every
// accepted message against what each recipient received, live or from
// history. It exits 1 when any accepted message was lost (or handed to an
// application twice), when, with bad clients (--poison-pct,
// --typing-flood-pct), any good send was refused, or when the live p99 is
// over twice --baseline's, so it can gate CI; 2 when the run itself failed.
//
//	chatload --scenario pairs --clients 600 --rate 2000 --duration 60s --html report.html
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
	"runtime/debug"
	"runtime/pprof"
	"syscall"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	var cfg Config
	fs := flag.NewFlagSet("chatload", flag.ContinueOnError)
	fs.SetOutput(stderr)
	embedded := registerFlags(fs, &cfg)
	cpuProfile := fs.String("cpuprofile", "", "write chatload's own CPU profile to this file (to tell the load generator's cost from chatd's)")
	memProfile := fs.String("memprofile", "", "write chatload's own heap profile (allocations since start) to this file when the run ends")
	gcPercent := fs.Int("gogc", 400, "chatload's own GC target percent, as GOGC (negative: off); with --url only, unless set here or in $GOGC, so an embedded chatd keeps Go's default. Higher spends chatload memory to save the CPU it shares with chatd and PostgreSQL")
	// The help asked for goes to stdout, so it can be piped; the usage
	// printed with an error goes to stderr.
	var printed bytes.Buffer
	fs.SetOutput(&printed)
	err := fs.Parse(args)
	fs.SetOutput(stderr)
	if errors.Is(err, flag.ErrHelp) {
		_, _ = printed.WriteTo(stdout)
		return 0
	}
	_, _ = printed.WriteTo(stderr)
	if err != nil {
		return 2
	}
	if *embedded && cfg.URL != "" {
		fmt.Fprintln(stderr, "chatload: --embedded and --url exclude each other")
		return 2
	}
	if setGOGC(fs, cfg.URL != "") {
		debug.SetGCPercent(*gcPercent)
	}
	cfg.Out = stdout
	cfg.Logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))

	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			fmt.Fprintln(stderr, "chatload:", err)
			return 2
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(stderr, "chatload:", err)
			return 2
		}
		defer pprof.StopCPUProfile()
	}
	if *memProfile != "" {
		defer func() {
			if err := writeHeapProfile(*memProfile); err != nil {
				fmt.Fprintln(stderr, "chatload:", err)
			}
		}()
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	rep, err := runLoad(ctx, cfg)
	if err != nil {
		fmt.Fprintln(stderr, "chatload:", err)
		if rep == nil {
			return 2
		}
	}
	rep.writeText(stdout)
	if err := writeFiles(&cfg, rep); err != nil {
		fmt.Fprintln(stderr, "chatload:", err)
		return 2
	}
	if !rep.Pass {
		return 1
	}
	return 0
}

func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		f.Close()
		return fmt.Errorf("write heap profile: %w", err)
	}
	return f.Close()
}

func writeFiles(cfg *Config, rep *Report) error {
	if cfg.JSONPath != "" {
		if err := rep.writeJSON(cfg.JSONPath); err != nil {
			return err
		}
	}
	if cfg.HTMLPath != "" {
		if err := rep.writeHTML(cfg.HTMLPath); err != nil {
			return err
		}
	}
	return nil
}

// setGOGC reports whether --gogc applies: when given, or else when chatd
// runs apart (remote) and $GOGC does not choose. chatload's live heap is
// small (the run's records) while it allocates per frame, so at Go's
// default of 100 it collected several times a second, and the marking, the
// assists and the regrowth of the send workers' stacks that each collection
// shrinks were a large share of its CPU under load: CPU that chatd and
// PostgreSQL lose on a shared box. At 400 the heap may grow to five
// times the live data, a few hundred MiB for a long run. An embedded chatd
// shares the setting, so there it stays Go's unless asked for.
func setGOGC(fs *flag.FlagSet, remote bool) bool {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == "gogc" })
	if given {
		return true
	}
	_, env := os.LookupEnv("GOGC")
	return remote && !env
}
