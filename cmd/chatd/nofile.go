package main

import (
	"fmt"
	"log/slog"
	"syscall"
)

// fileReserve is how many of the process's file descriptors
// --max-connections leaves to everything that is not a client connection:
// PostgreSQL and NATS connections, the JetStream store's files, the
// embedded PostgreSQL's pipes, logs.
const fileReserve = 1024

// raiseFileLimit raises the soft open-file limit to the hard one, since
// every connection is a descriptor and the soft default (often 1024) would
// cap chatd far below what the machine allows. It returns the soft limit in
// force afterwards.
func raiseFileLimit(log *slog.Logger) (uint64, error) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, fmt.Errorf("read the open-file limit: %w", err)
	}
	if lim.Cur < lim.Max {
		was := lim.Cur
		lim.Cur = lim.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
			log.Warn("could not raise the open-file limit; connections are capped by it", "soft", was, "hard", lim.Max, "err", err)
			return was, nil
		}
		log.Info("raised the open-file limit to its hard limit", "from", was, "to", lim.Max)
	}
	return lim.Cur, nil
}

// maxConnections is --max-connections' value: the flag when set, else the
// open-file limit less fileReserve (at least 64, so a tiny limit still
// serves someone).
func maxConnections(flag int, nofile uint64) int {
	if flag > 0 {
		return flag
	}
	n := int64(nofile) - fileReserve
	if nofile > 1<<31 {
		n = 1<<31 - fileReserve
	}
	return int(max(n, 64))
}
