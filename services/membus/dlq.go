package main

import (
	"context"
	"fmt"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"github.com/membus/membus/pkg/bus"
	"github.com/membus/membus/pkg/config"
	"github.com/membus/membus/pkg/contract"
	"github.com/membus/membus/services/membus/internal/app"
	"github.com/membus/membus/services/membus/internal/cli"
)

// dlqCommand inspects and replays dead letters.
func dlqCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "dlq", Short: "list, show and replay dead letters"}
	cmd.AddCommand(dlqListCommand(), dlqShowCommand(), dlqReplayCommand())
	return cmd
}

// withBus runs f connected to the running deployment's NATS.
func withBus(load func() (config.Config, error), name string, f func(ctx context.Context, js jetstream.JetStream, names bus.Names) error) error {
	cfg, err := load()
	if err != nil {
		return cli.Usagef("%v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	nc, js, names, err := app.Dial(ctx, cfg, name)
	if err != nil {
		return err
	}
	defer nc.Close()
	return f(ctx, js, names)
}

func dlqListCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "ls", Aliases: []string{"list"}, Short: "list dead letters, oldest first", Args: cli.NoArgs}
	filter := cmd.Flags().String("filter", "", "subject filter under <prefix>.dlq.>, e.g. 'membus.dlq.turns.>'")
	limit := cmd.Flags().Int("limit", 100, "at most this many letters")
	asJSON := cmd.Flags().Bool("json", false, "print a JSON array of the letters ([] when the queue is empty)")
	load := withConfig(cmd, busFlags...)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		return withBus(load, "membus-dlq", func(ctx context.Context, js jetstream.JetStream, names bus.Names) error {
			ls, err := bus.ListDLQ(ctx, js, names, *filter, *limit)
			if err != nil {
				return err
			}
			if *asJSON {
				out := make([]contract.DLQEnvelope, 0, len(ls))
				for _, l := range ls {
					out = append(out, l.DLQEnvelope)
				}
				return writeJSON(cmd.OutOrStdout(), out)
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "SEQ\tAT\tSTREAM\tFAILURES\tSUBJECT\tREASON")
			for _, l := range ls {
				fmt.Fprintf(w, "%d\t%s\t%s\t%d\t%s\t%s\n", l.Seq, l.At.UTC().Format(time.RFC3339), l.Stream, l.Failures, l.OriginalSubject, l.Reason)
			}
			if err := w.Flush(); err != nil {
				return err
			}
			if len(ls) == 0 {
				fmt.Fprintln(cmd.ErrOrStderr(), "the dead-letter queue is empty")
			}
			return nil
		})
	}
	return cmd
}

// seqArg parses the SEQ argument of dlq show and replay.
func seqArg(arg string) (uint64, error) {
	n, err := strconv.ParseUint(arg, 10, 64)
	if err != nil {
		return 0, cli.Usagef("%q is not a sequence number (see membus dlq ls)", arg)
	}
	return n, nil
}

func dlqShowCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "show SEQ", Short: "print one letter as JSON (its payload, reason and headers)", Args: cli.ExactArgs(1, "SEQ")}
	cmd.Flags().Bool("json", true, "print JSON (always; accepted for symmetry with ls)")
	load := withConfig(cmd, busFlags...)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		seq, err := seqArg(args[0])
		if err != nil {
			return err
		}
		return withBus(load, "membus-dlq", func(ctx context.Context, js jetstream.JetStream, names bus.Names) error {
			l, err := bus.GetDLQ(ctx, js, names, seq)
			if err != nil {
				return err
			}
			return writeJSON(cmd.OutOrStdout(), l.DLQEnvelope)
		})
	}
	return cmd
}

func dlqReplayCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "replay SEQ", Short: "re-publish a letter to its original subject, then delete it", Args: cli.ExactArgs(1, "SEQ")}
	load := withConfig(cmd, busFlags...)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		seq, err := seqArg(args[0])
		if err != nil {
			return err
		}
		return withBus(load, "membus-dlq", func(ctx context.Context, js jetstream.JetStream, names bus.Names) error {
			if err := bus.ReplayDLQ(ctx, js, names, seq); err != nil {
				return err
			}
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "replayed %d\n", seq)
			return err
		})
	}
	return cmd
}
