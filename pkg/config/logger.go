package config

import (
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/mattn/go-isatty"
)

// NewLogger returns the structured logger of a service: in format "auto" human-readable text
// when w is a terminal and JSON otherwise ("text" and "json" force one), with service and
// instance attributes on every record. An unknown level means info, an unknown format auto
// (Validate reports both).
func NewLogger(w io.Writer, level, format, service, instance string) *slog.Logger {
	opts := &slog.HandlerOptions{Level: parseLevel(level)}
	var h slog.Handler
	if format == "text" || (format != "json" && isTerminal(w)) {
		h = slog.NewTextHandler(w, opts)
	} else {
		h = slog.NewJSONHandler(w, opts)
	}
	l := slog.New(h)
	if service != "" {
		l = l.With("service", service)
	}
	if instance != "" {
		l = l.With("instance", instance)
	}
	return l
}

// Logger is NewLogger with c's level and format.
func (c Config) Logger(w io.Writer, service string) *slog.Logger {
	return NewLogger(w, c.LogLevel, c.LogFormat, service, c.InstanceID)
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()))
}

func parseLevel(s string) slog.Level {
	switch strings.ToLower(s) {
	case "debug":
		return slog.LevelDebug
	case "warn", "warning":
		return slog.LevelWarn
	case "error":
		return slog.LevelError
	}
	return slog.LevelInfo
}
