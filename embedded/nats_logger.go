package embedded

import (
	"context"
	"fmt"
	"log/slog"
)

// natsLogger adapts slog to server.Logger.
//
// Levels: Notice goes to Debug, because nats-server prints a multi-line
// banner and routine notices at start and stop; StartNATS logs one Info line
// of its own instead. Warn and Error keep their level. Fatal maps to Error:
// the server calls Fatalf for conditions it then handles by shutting down,
// and an embedded server must never exit the process.
type natsLogger struct {
	log *slog.Logger
}

func (l natsLogger) logf(level slog.Level, format string, v []any) {
	if !l.log.Enabled(context.Background(), level) {
		return
	}
	l.log.Log(context.Background(), level, fmt.Sprintf(format, v...))
}

func (l natsLogger) Noticef(format string, v ...any) { l.logf(slog.LevelDebug, format, v) }
func (l natsLogger) Warnf(format string, v ...any)   { l.logf(slog.LevelWarn, format, v) }
func (l natsLogger) Fatalf(format string, v ...any)  { l.logf(slog.LevelError, format, v) }
func (l natsLogger) Errorf(format string, v ...any)  { l.logf(slog.LevelError, format, v) }
func (l natsLogger) Debugf(format string, v ...any)  { l.logf(slog.LevelDebug, format, v) }
func (l natsLogger) Tracef(format string, v ...any)  { l.logf(slog.LevelDebug-4, format, v) }
