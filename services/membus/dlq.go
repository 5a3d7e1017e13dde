package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/membus/membus/pkg/bus"
	"github.com/membus/membus/pkg/config"
	"github.com/membus/membus/services/membus/internal/app"
)

// dlq inspects and replays dead letters.
func dlq(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "usage: membus dlq ls|show SEQ|replay SEQ")
		return 2
	}
	sub, rest := args[0], args[1:]
	fs := flag.NewFlagSet("membus dlq "+sub, flag.ContinueOnError)
	fs.SetOutput(stderr)
	filter := fs.String("filter", "", "subject filter under <prefix>.dlq.>")
	limit := fs.Int("limit", 100, "at most this many letters")
	asJSON := fs.Bool("json", false, "print JSON")
	cfg, err := config.Load(fs, flagsFirst(rest), os.Getenv)
	if err != nil {
		fmt.Fprintf(stderr, "membus dlq: %v\n", err)
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	nc, js, names, err := app.Dial(ctx, cfg, "membus-dlq")
	if err != nil {
		fmt.Fprintf(stderr, "membus dlq: %v\n", err)
		return 1
	}
	defer nc.Close()
	seqArg := func() (uint64, bool) {
		if fs.NArg() != 1 {
			fmt.Fprintf(stderr, "usage: membus dlq %s SEQ\n", sub)
			return 0, false
		}
		n, err := strconv.ParseUint(fs.Arg(0), 10, 64)
		if err != nil {
			fmt.Fprintf(stderr, "membus dlq %s: %q is not a sequence number (see membus dlq ls)\n", sub, fs.Arg(0))
			return 0, false
		}
		return n, true
	}
	switch sub {
	case "ls":
		ls, err := bus.ListDLQ(ctx, js, names, *filter, *limit)
		if err != nil {
			fmt.Fprintf(stderr, "membus dlq ls: %v\n", err)
			return 1
		}
		if *asJSON {
			enc := json.NewEncoder(stdout)
			for _, l := range ls {
				enc.Encode(l.DLQEnvelope)
			}
			return 0
		}
		w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "SEQ\tAT\tSTREAM\tFAILURES\tSUBJECT\tREASON")
		for _, l := range ls {
			fmt.Fprintf(w, "%d\t%s\t%s\t%d\t%s\t%s\n", l.Seq, l.At.UTC().Format(time.RFC3339), l.Stream, l.Failures, l.OriginalSubject, l.Reason)
		}
		w.Flush()
		if len(ls) == 0 {
			fmt.Fprintln(stderr, "the dead-letter queue is empty")
		}
	case "show":
		seq, ok := seqArg()
		if !ok {
			return 2
		}
		l, err := bus.GetDLQ(ctx, js, names, seq)
		if err != nil {
			fmt.Fprintf(stderr, "membus dlq show: %v\n", err)
			return 1
		}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.Encode(l.DLQEnvelope)
	case "replay":
		seq, ok := seqArg()
		if !ok {
			return 2
		}
		if err := bus.ReplayDLQ(ctx, js, names, seq); err != nil {
			fmt.Fprintf(stderr, "membus dlq replay: %v\n", err)
			return 1
		}
		fmt.Fprintf(stdout, "replayed %d\n", seq)
	default:
		fmt.Fprintf(stderr, "membus dlq: unknown subcommand %q (ls, show, replay)\n", sub)
		return 2
	}
	return 0
}
