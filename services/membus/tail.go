package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/membus/membus/pkg/config"
	"github.com/membus/membus/pkg/contract"
	"github.com/membus/membus/services/membus/internal/app"
)

// tail prints metrics snapshots or events live until Ctrl-C (or --for elapses).
func tail(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || (args[0] != "metrics" && args[0] != "events") {
		fmt.Fprintln(stderr, "usage: membus tail metrics|events [--for DURATION]")
		return 2
	}
	what := args[0]
	fs := flag.NewFlagSet("membus tail "+what, flag.ContinueOnError)
	fs.SetOutput(stderr)
	dur := fs.Duration("for", 0, "stop after this long (0: until Ctrl-C)")
	cfg, err := config.Load(fs, args[1:], os.Getenv)
	if err != nil {
		fmt.Fprintf(stderr, "membus tail: %v\n", err)
		return 2
	}
	ctx, stop := app.SignalContext()
	defer stop()
	if *dur > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *dur)
		defer cancel()
	}
	dctx, dcancel := context.WithTimeout(ctx, 10*time.Second)
	nc, _, names, err := app.Dial(dctx, cfg, "membus-tail")
	dcancel()
	if err != nil {
		fmt.Fprintf(stderr, "membus tail: %v\n", err)
		return 1
	}
	defer nc.Close()
	lines := make(chan string, 256)
	subject := names.Prefix + ".metrics.>"
	format := formatMetrics
	if what == "events" {
		subject, format = names.Prefix+".events.>", formatEvent
	}
	sub, err := nc.Subscribe(subject, func(m *nats.Msg) {
		select {
		case lines <- format(m):
		default: // a slow terminal drops lines rather than blocking the connection
		}
	})
	if err != nil {
		fmt.Fprintf(stderr, "membus tail: %v\n", err)
		return 1
	}
	defer sub.Unsubscribe()
	fmt.Fprintf(stderr, "tailing %s (Ctrl-C to stop)\n", subject)
	for {
		select {
		case <-ctx.Done():
			return 0
		case l := <-lines:
			fmt.Fprintln(stdout, l)
		}
	}
}

func formatMetrics(m *nats.Msg) string {
	var s contract.MetricsSnapshot
	if err := json.Unmarshal(m.Data, &s); err != nil {
		return m.Subject + " (undecodable: " + err.Error() + ")"
	}
	var parts []string
	for k, v := range s.Counters {
		if v != 0 {
			parts = append(parts, fmt.Sprintf("%s=%g", strings.TrimPrefix(k, "membus_"), v))
		}
	}
	for k, l := range s.Latencies {
		if l.Count > 0 {
			parts = append(parts, fmt.Sprintf("%s p50=%.1fms p99=%.1fms n=%d", strings.TrimPrefix(k, "membus_"), l.P50, l.P99, l.Count))
		}
	}
	sort.Strings(parts)
	return fmt.Sprintf("%s %-10s %s  %s", s.At.Local().Format("15:04:05"), s.Service, s.Instance, strings.Join(parts, "  "))
}

func formatEvent(m *nats.Msg) string {
	var e contract.Event
	if err := json.Unmarshal(m.Data, &e); err != nil {
		return m.Subject + " (undecodable: " + err.Error() + ")"
	}
	line := fmt.Sprintf("%s %-17s account=%s session=%s", e.At.Local().Format("15:04:05"), e.Kind, e.AccountID, e.SessionID)
	for _, kv := range [][2]string{{"archive", e.ArchiveID}, {"memory", e.MemoryID}, {"category", e.Category}, {"status", e.Status}, {"request", e.RequestID}} {
		if kv[1] != "" {
			line += " " + kv[0] + "=" + kv[1]
		}
	}
	return line
}
