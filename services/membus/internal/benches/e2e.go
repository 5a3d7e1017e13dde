package benches

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"github.com/membus/membus/pkg/bench"
	"github.com/membus/membus/pkg/bus"
	"github.com/membus/membus/pkg/contract"
	"github.com/membus/membus/services/membus/internal/app"
	"github.com/membus/membus/services/membus/internal/cli"
	"github.com/membus/membus/services/membus/internal/harness"
)

// e2eParams are the knobs of one `membus bench e2e` run.
type e2eParams struct {
	backend  harness.Backend // zero: embedded
	count    int
	warmup   int
	embedder string
	timeout  time.Duration // how long one turn may take to become recallable
	progress io.Writer
	notes    io.Writer // where each run's phase breakdown goes (nil: nowhere)
}

// errNotRecallable: the memory of a published turn did not appear in recall in time.
var errNotRecallable = errors.New("memory not recallable")

func benchE2ECmd() *cobra.Command {
	cmd := &cobra.Command{Use: "e2e", Short: "turn to recallable memory: publish, commit, recall until it appears", Args: cli.NoArgs}
	fs := cmd.Flags()
	syncMode := fs.String("sync", "both", "JetStream durability of the embedded server: always, interval or both")
	count := fs.Int("count", 50, "measured turns (each: publish, synchronous commit, recall until the memory appears)")
	warmup := fs.Int("warmup", 5, "turns before measuring")
	embedder := fs.String("embedder", "hash", "embedder (pinned: never what happens to be on disk)")
	timeout := fs.Duration("timeout", 60*time.Second, "longest one turn may take to become recallable")
	asJSON := fs.Bool("json", false, "print docs/design.md §10 JSON Lines on stdout")
	progress := fs.Bool("progress", false, "draw a progress bar on stderr even when it is not a terminal")
	backend := fs.String("backend", "embedded", harness.BackendUsage)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
		return cli.Exit(func() int {
			if *count < 1 || *warmup < 0 || *timeout <= 0 {
				fmt.Fprintln(stderr, "membus bench e2e: --count and --timeout must be positive, --warmup not negative")
				return 2
			}
			modes, err := harness.SyncModes(*syncMode)
			if err != nil {
				fmt.Fprintf(stderr, "membus bench e2e: %v\n", err)
				return 2
			}
			if *embedder == "auto" {
				fmt.Fprintln(stderr, "membus bench e2e: --embedder must name an embedder (hash, onnx, openai), not auto")
				return 2
			}
			p := e2eParams{count: *count, warmup: *warmup, embedder: *embedder, timeout: *timeout, notes: stderr}
			rb, err := harness.BackendFlag(*backend)
			if err != nil {
				fmt.Fprintf(stderr, "membus bench e2e: %v\n", err)
				return 2
			}
			p.backend = rb
			p.progress = harness.Progress(*progress, stderr)
			ctx, stop := app.SignalContext()
			defer stop()
			var results []bench.Result
			for _, mode := range modes {
				r, err := benchE2E(ctx, mode, p)
				if err != nil {
					fmt.Fprintf(stderr, "membus bench e2e (sync %s): %v\n", mode, err)
					return 1
				}
				results = append(results, r)
			}
			return writeResults(stdout, stderr, "e2e", *asJSON, results)
		}())
	}
	return cmd
}

// e2eName is a made-up name, unique per operation, that recall can only find in the memory
// of that operation's turn.
func e2eName(i int) string {
	const letters = "bcdfghjklmnpqrstvwxz"
	var b strings.Builder
	b.WriteString("Zo")
	for {
		b.WriteByte(letters[i%len(letters)])
		i /= len(letters)
		if i == 0 {
			break
		}
	}
	return b.String() + "ix"
}

// e2eTurn is the turn of operation i: one user message stating a fact.
func e2eTurn(account, user, session string, i int, at time.Time) contract.TurnEvent {
	msgID := fmt.Sprintf("e2e-%d", i)
	return contract.TurnEvent{V: contract.Version, EventID: bus.MsgID(account, session, msgID), AccountID: account, UserID: user,
		AgentID: "main", SessionID: session, Source: "bench", SentAt: at, Messages: []contract.Message{{
			MessageID: msgID, Role: contract.RoleUser, CreatedAt: at,
			Parts: []contract.Part{{Type: contract.PartText, Text: "I have a dog named " + e2eName(i) + "."}},
		}}}
}

// benchE2E measures turn published → memory recallable on a fresh embedded membus: each
// operation publishes a turn stating a fact (its own user and session), commits it with the
// synchronous commit RPC and polls recall until the memory appears. The floor, on the same
// server in the same run, is raw JetStream: publish the same payload to a stream and consume
// it with a pull consumer.
func benchE2E(ctx context.Context, mode string, p e2eParams) (bench.Result, error) {
	env, closeEnv, err := harness.Open(ctx, mode, p.embedder, p.backend, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		return bench.Result{}, err
	}
	defer closeEnv()
	account := "bench-e2e"
	if p.backend.RunID != "" {
		account += "-" + p.backend.RunID
	}
	var phases e2ePhases
	op := func(ctx context.Context, i int) (int, error) {
		user, session := fmt.Sprintf("u-%d", i), fmt.Sprintf("s-%d", i)
		ev := e2eTurn(account, user, session, i, time.Now().UTC())
		start := time.Now()
		if _, err := bus.PublishJSON(ctx, env.JS, env.Names.Turns(account, session), ev.EventID, ev); err != nil {
			return 0, err
		}
		published := time.Now()
		var res contract.CommitResult
		if err := bus.Call(ctx, env.NC, env.Names.RPC(account, "commit"), contract.CommitRPCRequest{V: contract.Version,
			RequestID: "e2e-" + session, UserID: user, AgentID: "main", SessionID: session, Kind: contract.CommitSync, Wait: true,
			TimeoutMS: int(p.timeout.Milliseconds())}, &res); err != nil {
			return 0, fmt.Errorf("commit: %w", err)
		}
		if res.Status != contract.StatusCompleted {
			return 0, fmt.Errorf("commit: status %s (%s)", res.Status, res.Reason)
		}
		committed := time.Now()
		name := e2eName(i)
		deadline := time.Now().Add(p.timeout)
		for {
			var rec contract.RecallResponse
			if err := bus.Call(ctx, env.NC, env.Names.RPC(account, "recall"), contract.RecallRequest{V: contract.Version, UserID: user,
				Query: "What is the name of my dog?"}, &rec); err != nil {
				return 0, fmt.Errorf("recall: %w", err)
			}
			for _, it := range rec.Items {
				if strings.Contains(it.Text, name) {
					if i >= p.warmup {
						phases.add(published.Sub(start), committed.Sub(published), time.Since(committed))
					}
					return 1, nil
				}
			}
			if time.Now().After(deadline) {
				return 0, fmt.Errorf("%w within %s: %q", errNotRecallable, p.timeout, name)
			}
			select {
			case <-ctx.Done():
				return 0, ctx.Err()
			case <-time.After(time.Millisecond):
			}
		}
	}
	opt := bench.Options{WarmupCount: p.warmup, Count: p.count, Concurrency: 1, Progress: p.progress}
	res, err := bench.Run(ctx, "e2e", opt, op)
	if err != nil {
		return res, err
	}

	floorOp, stopFloor, err := e2eFloor(ctx, env.JS, env.Names.Prefix, account)
	if err != nil {
		return res, fmt.Errorf("floor: %w", err)
	}
	defer stopFloor()
	fl, err := bench.Run(ctx, "e2e-floor", opt, floorOp)
	if err != nil {
		return res, fmt.Errorf("floor: %w", err)
	}
	if p.notes != nil {
		phases.write(p.notes, fmt.Sprintf("e2e sync=%s", mode))
	}
	res.Backend, res.Sync, res.Embedder, res.Size = "embedded", mode, env.Embedder.Model(), p.count
	if p.backend.DSN != "" {
		res.Backend = "real"
	}
	res.Floor = &fl
	res.RSSMB = bench.RSSMB()
	return res, nil
}

// e2eFloor returns the floor operation: publish the same turn payload to a stream of its own
// (file storage, like TURNS) and receive it from a pull consumer, acked.
func e2eFloor(ctx context.Context, js jetstream.JetStream, prefix, account string) (bench.Op, func(), error) {
	stream := strings.ToUpper(prefix) + "_E2E_FLOOR"
	subject := prefix + ".e2efloor"
	s, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{Name: stream, Subjects: []string{subject}, Storage: jetstream.FileStorage,
		Retention: jetstream.WorkQueuePolicy})
	if err != nil {
		return nil, nil, err
	}
	cons, err := s.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{Durable: "e2e-floor", AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		return nil, nil, err
	}
	stop := func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		_ = js.DeleteStream(dctx, stream)
	}
	op := func(ctx context.Context, i int) (int, error) {
		ev := e2eTurn(account, fmt.Sprintf("u-%d", i), fmt.Sprintf("s-%d", i), i, time.Now().UTC())
		data, err := json.Marshal(ev)
		if err != nil {
			return 0, err
		}
		if _, err := bus.Publish(ctx, js, subject, ev.EventID, data, nil); err != nil {
			return 0, err
		}
		m, err := cons.Next(jetstream.FetchMaxWait(10 * time.Second))
		if err != nil {
			return 0, err
		}
		if string(m.Data()) != string(data) {
			return 0, fmt.Errorf("floor consumer got another payload")
		}
		return 1, m.DoubleAck(ctx)
	}
	return op, stop, nil
}

// e2ePhases are the measured operations' times per phase: the publish (until its PubAck),
// the synchronous commit RPC (waiting for ingest to apply the turn, archive, extract, index,
// the commit_completed event) and recall until the memory shows.
type e2ePhases struct {
	publish, commit, recall []time.Duration
}

func (ph *e2ePhases) add(publish, commit, recall time.Duration) {
	ph.publish = append(ph.publish, publish)
	ph.commit = append(ph.commit, commit)
	ph.recall = append(ph.recall, recall)
}

// write prints each phase's p50 and p99 on one line.
func (ph *e2ePhases) write(w io.Writer, title string) {
	pct := func(ds []time.Duration, p int) float64 {
		if len(ds) == 0 {
			return 0
		}
		s := slices.Clone(ds)
		slices.Sort(s)
		return ms(s[min(len(s)-1, len(s)*p/100)])
	}
	fmt.Fprintf(w, "%s phases over %d turns, p50 / p99 ms: publish %.2f / %.2f, commit RPC %.2f / %.2f, recall until visible %.2f / %.2f\n",
		title, len(ph.publish), pct(ph.publish, 50), pct(ph.publish, 99), pct(ph.commit, 50), pct(ph.commit, 99), pct(ph.recall, 50), pct(ph.recall, 99))
}
