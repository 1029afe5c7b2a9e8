package embedded

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"strings"
	"sync"
)

// tailLines is how many recent server log lines are kept to explain a
// failed start in the returned error.
const tailLines = 20

// serverLog copies the server's stderr into slog, one record per line, and
// keeps the last lines for error messages. The server runs with an empty
// log_line_prefix, so each line starts with its severity ("LOG:  ...").
//
// Levels: LOG/INFO/NOTICE/DEBUG go to Debug (routine; chatd logs its own
// Info lines for start and stop), WARNING and ERROR to Warn (ERRORs are
// mostly client errors the app handles), FATAL to Warn except the routine
// ones in routineFatal (Debug), PANIC to Error. Continuation lines (DETAIL,
// HINT, CONTEXT, wrapped text) keep the previous level.
type serverLog struct {
	log *slog.Logger

	mu   sync.Mutex
	tail []string
}

func newServerLog(log *slog.Logger) *serverLog {
	return &serverLog{log: log}
}

// copy reads r until EOF. EOF comes when the postmaster and every backend
// that inherited the pipe have exited.
func (l *serverLog) copy(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	level := slog.LevelDebug
	for sc.Scan() {
		line := sc.Text()
		if lv, ok := severity(line); ok {
			level = lv
		}
		l.remember(line)
		l.log.Log(context.Background(), level, line)
	}
}

func severity(line string) (slog.Level, bool) {
	sev, _, ok := strings.Cut(line, ":")
	if !ok {
		return 0, false
	}
	switch sev {
	case "LOG", "INFO", "NOTICE", "DEBUG", "DEBUG1", "DEBUG2", "DEBUG3", "DEBUG4", "DEBUG5":
		return slog.LevelDebug, true
	case "FATAL":
		for _, r := range routineFatal {
			if strings.Contains(line, r) {
				return slog.LevelDebug, true
			}
		}
		return slog.LevelWarn, true
	case "WARNING", "ERROR":
		return slog.LevelWarn, true
	case "PANIC":
		return slog.LevelError, true
	}
	return 0, false
}

// routineFatal are FATAL messages that end one session as part of normal
// operation: our readiness polls while the server starts or recovers, and
// sessions ended by a shutdown, a crash restart or DROP DATABASE ... FORCE.
var routineFatal = []string{
	"the database system is starting up",
	"the database system is not yet accepting connections",
	"the database system is shutting down",
	"terminating connection due to administrator command",
	"terminating connection due to unexpected postmaster exit",
}

func (l *serverLog) remember(line string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.tail) == tailLines {
		l.tail = append(l.tail[:0], l.tail[1:]...)
	}
	l.tail = append(l.tail, line)
}

// lastLines returns the recent log lines joined for an error message.
func (l *serverLog) lastLines() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.tail, "\n")
}
