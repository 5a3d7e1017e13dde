package main

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/spf13/cobra"

	"github.com/membus/membus/pkg/bus"
	"github.com/membus/membus/pkg/config"
	"github.com/membus/membus/pkg/contract"
	"github.com/membus/membus/services/membus/internal/app"
	"github.com/membus/membus/services/membus/internal/cli"
)

// tailCommand prints metrics snapshots or events live until Ctrl-C (or --for elapses). It
// connects as every other command does (app.Dial: --nats-url and --nats-token, else the
// embedded server of `membus up` on --nats-listen with the token in --data-dir).
func tailCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "tail", Short: "print metrics snapshots or events live"}
	cmd.AddCommand(tailSubcommand("metrics", "every service's metrics snapshot (every 5 s)", formatMetrics),
		tailSubcommand("events", "domain events as they happen (commits, memories, archives, erasures)", formatEvent))
	return cmd
}

func tailSubcommand(what, short string, format func(*nats.Msg) string) *cobra.Command {
	cmd := &cobra.Command{Use: what, Short: short, Args: cli.NoArgs}
	dur := cmd.Flags().Duration("for", 0, "stop after this long (0: until Ctrl-C)")
	load := withConfig(cmd, busFlags...)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		cfg, err := load()
		if err != nil {
			return cli.Usagef("%v", err)
		}
		ctx, nc, names, done, err := watch(cfg, *dur, "membus-tail")
		if err != nil {
			return err
		}
		defer done()
		lines := make(chan string, 256)
		subject := names.Prefix + "." + what + ".>"
		sub, err := nc.Subscribe(subject, func(m *nats.Msg) {
			select {
			case lines <- format(m):
			default: // a slow terminal drops lines rather than blocking the connection
			}
		})
		if err != nil {
			return err
		}
		// Closing the connection below ends the subscription too; its error changes nothing.
		defer func() { _ = sub.Unsubscribe() }()
		fmt.Fprintf(cmd.ErrOrStderr(), "tailing %s (Ctrl-C to stop)\n", subject)
		for {
			select {
			case <-ctx.Done():
				return nil
			case l := <-lines:
				fmt.Fprintln(cmd.OutOrStdout(), l)
			}
		}
	}
	return cmd
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

// watch is the start of the commands that watch a running membus (tail, top): a context that
// Ctrl-C (SIGINT), SIGTERM or --for ends, and a NATS connection made as every command makes it
// (app.Dial). done closes the connection and releases the context.
func watch(cfg config.Config, dur time.Duration, name string) (context.Context, *nats.Conn, bus.Names, func(), error) {
	ctx, stop := app.SignalContext()
	cancel := context.CancelFunc(func() {})
	if dur > 0 {
		ctx, cancel = context.WithTimeout(ctx, dur)
	}
	dctx, dcancel := context.WithTimeout(ctx, 10*time.Second)
	nc, _, names, err := app.Dial(dctx, cfg, name)
	dcancel()
	if err != nil {
		cancel()
		stop()
		return nil, nil, bus.Names{}, nil, err
	}
	return ctx, nc, names, func() { nc.Close(); cancel(); stop() }, nil
}
