package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/membus/membus/pkg/bench"
	"github.com/membus/membus/pkg/bus"
	"github.com/membus/membus/pkg/config"
	"github.com/membus/membus/pkg/contract"
	"github.com/membus/membus/pkg/runtime"
)

func benchIngestCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("membus bench ingest", flag.ContinueOnError)
	fs.SetOutput(stderr)
	count := fs.Int("count", 500, "events to measure (after 50 warm-up events)")
	conc := fs.Int("concurrency", 4, "concurrent publishers, one session each")
	perEvent := fs.Int("messages", 2, "messages per turn event")
	syncMode := fs.String("sync", "both", "JetStream durability: always, interval or both")
	asJSON := fs.Bool("json", false, "print SPEC §10 JSON Lines on stdout")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	modes := []string{*syncMode}
	if *syncMode == "both" {
		modes = []string{"always", "interval"}
	}
	ctx, stop := runtime.SignalContext()
	defer stop()
	var results []bench.Result
	for _, mode := range modes {
		if mode != "always" && mode != "interval" {
			fmt.Fprintf(stderr, "membus bench: --sync must be always, interval or both, got %q\n", mode)
			return 2
		}
		r, err := benchIngest(ctx, mode, *count, *conc, *perEvent, stderr)
		if err != nil {
			fmt.Fprintf(stderr, "membus bench ingest (%s): %v\n", mode, err)
			return 1
		}
		results = append(results, r)
	}
	if *asJSON {
		bench.WriteJSON(stdout, results...)
	} else {
		bench.WriteTable(stdout, results...)
	}
	return 0
}

// benchIngest measures publish → durable in SQL through the real ingest service of an
// embedded system, against raw JetStream publish + consume + ack on the same server.
func benchIngest(ctx context.Context, mode string, count, conc, perEvent int, stderr io.Writer) (bench.Result, error) {
	dir, err := os.MkdirTemp("", "membus-bench-")
	if err != nil {
		return bench.Result{}, err
	}
	defer os.RemoveAll(dir)
	cfg := config.Defaults()
	cfg.DataDir = dir
	cfg.NATSListen = "127.0.0.1:0"
	cfg.NATSSync = mode
	cfg.CommitTokenThreshold = contract.MaxCommitTokenThreshold // measure ingest, not commits
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return bench.Result{}, err
	}
	cfg.HTTPAddr = ln.Addr().String()
	ln.Close()
	env, err := runtime.Open(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		return bench.Result{}, err
	}
	defer env.Close()
	services, err := buildAll(env)
	if err != nil {
		return bench.Result{}, err
	}
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- env.RunAll(rctx, services...) }()
	defer func() { cancel(); <-done }()

	text := strings.Repeat("The quick brown fox jumps over the lazy dog. ", 6)
	stored := make([]int64, conc)
	op := func(ctx context.Context, i int) (int, error) {
		w := i % conc
		session := fmt.Sprintf("bench-%d", w)
		ev := contract.TurnEvent{V: 1, EventID: fmt.Sprintf("bench-%s-%d", mode, i), AccountID: "bench", UserID: "u", AgentID: "main",
			SessionID: session, Source: "bench", SentAt: time.Now().UTC()}
		for j := 0; j < perEvent; j++ {
			ev.Messages = append(ev.Messages, contract.Message{MessageID: fmt.Sprintf("m-%d-%d", i, j), Position: j, Role: contract.RoleUser,
				Parts: []contract.Part{{Type: contract.PartText, Text: text}}, CreatedAt: ev.SentAt})
		}
		if _, err := bus.PublishJSON(ctx, env.JS, env.Names.Turns("bench", session), ev.EventID, ev); err != nil {
			return 0, err
		}
		stored[w] += int64(perEvent)
		for {
			s, err := env.Store.GetSession(ctx, "bench", session)
			if err == nil && s.MessageCount >= stored[w] {
				return perEvent, nil
			}
			select {
			case <-ctx.Done():
				return 0, ctx.Err()
			case <-time.After(200 * time.Microsecond):
			}
		}
	}
	// One worker per session keeps each worker's expected count exact.
	opts := bench.Options{WarmupCount: 50, Count: count, Concurrency: conc, Progress: stderr}
	res, err := benchPerWorker(ctx, "ingest", opts, conc, op)
	if err != nil {
		return res, err
	}
	floor, err := rawJetStream(ctx, env.JS, mode, len(text)*perEvent+400, opts, conc)
	if err != nil {
		return res, fmt.Errorf("floor: %w", err)
	}
	res.Backend, res.Sync, res.Size, res.RSSMB, res.Floor = "embedded", mode, perEvent, bench.RSSMB(), &floor
	return res, nil
}

// benchPerWorker runs op with worker w always handling operations i ≡ w (mod conc).
func benchPerWorker(ctx context.Context, name string, opts bench.Options, conc int, op bench.Op) (bench.Result, error) {
	if opts.Concurrency != conc {
		return bench.Result{}, errors.New("concurrency mismatch")
	}
	return bench.Run(ctx, name, opts, op)
}

// rawJetStream is the floor: publish a message of the same size to a stream with the same
// durability, then fetch and ack it from a durable pull consumer.
func rawJetStream(ctx context.Context, js jetstream.JetStream, mode string, size int, opts bench.Options, conc int) (bench.Result, error) {
	st, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{Name: "BENCH_FLOOR", Subjects: []string{"benchfloor.>"},
		Retention: jetstream.WorkQueuePolicy, Storage: jetstream.FileStorage})
	if err != nil {
		return bench.Result{}, err
	}
	consumers := make([]jetstream.Consumer, conc)
	for w := range consumers {
		c, err := st.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{Durable: fmt.Sprintf("floor-%d", w),
			FilterSubject: fmt.Sprintf("benchfloor.%d", w), AckPolicy: jetstream.AckExplicitPolicy})
		if err != nil {
			return bench.Result{}, err
		}
		consumers[w] = c
	}
	payload := make([]byte, size)
	for i := range payload {
		payload[i] = 'x'
	}
	opts.Progress = nil
	res, err := bench.Run(ctx, "ingest-floor", opts, func(ctx context.Context, i int) (int, error) {
		w := i % conc
		if _, err := js.Publish(ctx, fmt.Sprintf("benchfloor.%d", w), payload); err != nil {
			return 0, err
		}
		batch, err := consumers[w].Fetch(1, jetstream.FetchMaxWait(5*time.Second))
		if err != nil {
			return 0, err
		}
		for m := range batch.Messages() {
			if err := m.DoubleAck(ctx); err != nil {
				return 0, err
			}
		}
		return 1, batch.Error()
	})
	res.Backend, res.Sync = "embedded", mode
	return res, err
}
