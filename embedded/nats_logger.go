package embedded

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
)

// natsLogger adapts slog to server.Logger.
//
// Levels: Notice goes to Debug, because nats-server prints a multi-line
// banner and routine notices at start and stop; StartNATS logs one Info line
// of its own instead. Warn and Error keep their level. Fatal maps to Error:
// the server calls Fatalf for conditions it then handles by shutting down,
// and an embedded server must never exit the process. The first fatal
// message is also kept in fatal, so a start that can never become ready
// (a listener that cannot bind) fails at once with its reason.
type natsLogger struct {
	log   *slog.Logger
	fatal *firstFatal
}

// firstFatal keeps the first message the server reported as fatal. Safe
// for concurrent use.
type firstFatal struct {
	mu  sync.Mutex
	msg string
}

func (f *firstFatal) set(msg string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.msg == "" {
		f.msg = msg
	}
}

func (f *firstFatal) get() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.msg
}

func (l natsLogger) logf(level slog.Level, format string, v []any) {
	if !l.log.Enabled(context.Background(), level) {
		return
	}
	l.log.Log(context.Background(), level, fmt.Sprintf(format, v...))
}

func (l natsLogger) Noticef(format string, v ...any) { l.logf(slog.LevelDebug, format, v) }
func (l natsLogger) Warnf(format string, v ...any)   { l.logf(slog.LevelWarn, format, v) }
func (l natsLogger) Fatalf(format string, v ...any) {
	if l.fatal != nil {
		l.fatal.set(fmt.Sprintf(format, v...))
	}
	l.logf(slog.LevelError, format, v)
}
func (l natsLogger) Errorf(format string, v ...any) { l.logf(slog.LevelError, format, v) }
func (l natsLogger) Debugf(format string, v ...any) { l.logf(slog.LevelDebug, format, v) }
func (l natsLogger) Tracef(format string, v ...any) { l.logf(slog.LevelDebug-4, format, v) }
