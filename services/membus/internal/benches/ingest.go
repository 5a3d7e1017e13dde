package benches

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"github.com/membus/membus/pkg/bench"
	"github.com/membus/membus/pkg/bus"
	"github.com/membus/membus/pkg/config"
	"github.com/membus/membus/pkg/contract"
	"github.com/membus/membus/services/membus/internal/app"
	"github.com/membus/membus/services/membus/internal/cli"
	"github.com/membus/membus/services/membus/internal/harness"
)

// ingestParams are the knobs of one `membus bench ingest` run.
type ingestParams struct {
	backend  string        // embedded | real
	events   int           // events of the throughput phase
	sessions int           // sessions the events are spread over
	perEvent int           // messages per turn event
	inflight int           // async publishes in flight
	rate     int           // offered load of the latency phase, messages/s
	duration time.Duration // length of the latency phase
	warmup   int           // events published and stored before measuring
	rounds   int           // throughput phases of each target, alternating membus and floor
	progress io.Writer     // progress bar (nil = none)
	notes    io.Writer     // one line per phase on stderr
}

func benchIngestCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "ingest", Short: "ingest throughput and latency against the raw JetStream floor", Args: cli.NoArgs}
	fs := cmd.Flags()
	backend := fs.String("backend", "embedded", harness.BackendUsage)
	syncMode := fs.String("sync", "both", "JetStream durability: always, interval or both (with MEMBUS_NATS_URL: the server's setting, always or interval)")
	events := fs.Int("events", 4000, "turn events of the throughput phase (published pipelined; size = events × messages)")
	sessions := fs.Int("sessions", 50, "sessions the events are spread over")
	perEvent := fs.Int("messages", 2, "messages per turn event")
	inflight := fs.Int("inflight", 256, "async publishes in flight in the throughput phase")
	rate := fs.Int("rate", 1000, "offered load of the latency phase, messages/s")
	duration := fs.Duration("duration", 3*time.Second, "length of the latency phase")
	warmup := fs.Int("warmup", 200, "events stored before measuring")
	rounds := fs.Int("rounds", 1, "throughput phases of membus and the floor, alternating; the row is the round of the median ratio")
	asJSON := fs.Bool("json", false, "print docs/design.md §10 JSON Lines on stdout")
	progress := fs.Bool("progress", false, "draw a progress bar on stderr even when it is not a terminal")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the whole run to this file")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
		return cli.Exit(func() int {
			if *events < 1 || *sessions < 1 || *perEvent < 1 || *inflight < 1 || *rate < 1 || *duration <= 0 || *warmup < 0 || *rounds < 1 {
				fmt.Fprintln(stderr, "membus bench ingest: --events, --sessions, --messages, --inflight, --rate, --duration and --rounds must be positive")
				return 2
			}
			modes, err := harness.SyncModes(*syncMode)
			if err != nil {
				fmt.Fprintf(stderr, "membus bench ingest: %v\n", err)
				return 2
			}
			rb, err := harness.BackendFlag(*backend)
			if err != nil {
				fmt.Fprintf(stderr, "membus bench ingest: %v\n", err)
				return 2
			}
			if rb.NATSURL != "" && len(modes) != 1 {
				fmt.Fprintln(stderr, "membus bench ingest: with MEMBUS_NATS_URL the server's own sync_interval decides durability: pass --sync always or --sync interval to name it")
				return 2
			}
			p := ingestParams{backend: *backend, events: *events, sessions: *sessions, perEvent: *perEvent, inflight: *inflight,
				rate: *rate, duration: *duration, warmup: *warmup, rounds: *rounds, notes: stderr}
			p.progress = harness.Progress(*progress, stderr)
			stopProfile, err := harness.CPUProfile(*cpuProfile)
			if err != nil {
				fmt.Fprintf(stderr, "membus bench ingest: %v\n", err)
				return 1
			}
			defer stopProfile()
			ctx, stop := app.SignalContext()
			defer stop()
			var results []bench.Result
			for _, mode := range modes {
				r, err := benchIngest(ctx, mode, rb, p)
				if err != nil {
					fmt.Fprintf(stderr, "membus bench ingest (%s, sync %s): %v\n", p.backend, mode, err)
					return 1
				}
				results = append(results, r)
			}
			return writeResults(stdout, stderr, "ingest", *asJSON, results)
		}())
	}
	return cmd
}

// benchIngest measures one configuration: membus ingest (publish → visible in SQL) and, on the
// same server with the same stream settings, raw JetStream publish + consume (the floor).
// Throughput: every event published pipelined, timed until the last message is visible.
// Latency: a paced publisher at the offered rate, each event timed from its publish to the
// moment its session's count reaches it.
func benchIngest(ctx context.Context, mode string, rb harness.Backend, p ingestParams) (bench.Result, error) {
	account := "bench-" + harness.RandomHex(4)
	env, closeEnv, err := openBenchEnv(ctx, mode, rb, account)
	if err != nil {
		return bench.Result{}, err
	}
	defer closeEnv()

	// The publisher is a client of its own, like the plugin.
	pubNC, err := bus.Connect(ctx, env.NATSURL, env.Config.NATSToken, "membus-bench-publisher")
	if err != nil {
		return bench.Result{}, err
	}
	defer pubNC.Close()
	pubJS, err := jetstream.New(pubNC, jetstream.WithPublishAsyncMaxPending(p.inflight))
	if err != nil {
		return bench.Result{}, err
	}

	sessions := make([]string, p.sessions)
	for i := range sessions {
		sessions[i] = fmt.Sprintf("s-%03d", i)
	}
	gen := newEventGen(account, sessions, p.perEvent)

	counts, closeCounts, err := sqlCounts(env, account, sessions)
	if err != nil {
		return bench.Result{}, err
	}
	defer closeCounts()
	membus := ingestTarget{
		name:    "membus",
		subject: func(s int) string { return env.Names.Turns(account, sessions[s]) },
		counts:  counts,
		stages:  func() (stageSample, error) { return readStages(env) },
	}
	floor, stopFloor, err := startFloor(ctx, env, sessions, p.perEvent)
	if err != nil {
		return bench.Result{}, fmt.Errorf("floor: %w", err)
	}
	defer stopFloor()

	res := bench.Result{Bench: "ingest", Backend: p.backend, Sync: mode, Size: p.events * p.perEvent}
	fl := bench.Result{Bench: "ingest-floor", Backend: p.backend, Sync: mode, Size: res.Size}
	if err := measureRounds(ctx, pubJS, gen, membus, floor, p, &res, &fl); err != nil {
		return res, err
	}
	for _, t := range []struct {
		target ingestTarget
		out    *bench.Result
	}{{membus, &res}, {floor, &fl}} {
		if err := measureLatency(ctx, pubJS, gen, t.target, p, t.out); err != nil {
			return res, fmt.Errorf("%s: %w", t.target.name, err)
		}
	}
	res.Floor = &fl
	res.RSSMB = bench.RSSMB()
	return res, nil
}

// openBenchEnv starts a fresh membus (every service, as `membus up` does) for one durability
// mode: its own data dir, subject prefix and streams, the commit threshold at its maximum so
// the run measures ingest rather than commits. The close function removes what the run left
// in shared servers (the bench account's rows, the bench streams).
func openBenchEnv(ctx context.Context, mode string, rb harness.Backend, account string) (*app.Env, func(), error) {
	cfg := config.Defaults()
	cfg.NATSSync = mode
	cfg.SubjectPrefix = "bench" + harness.RandomHex(4)
	cfg.InstanceID = "bench"
	cfg.CommitTokenThreshold = contract.MaxCommitTokenThreshold
	cfg.MySQLDSN, cfg.RedisURL, cfg.NATSURL = rb.DSN, rb.RedisURL, rb.NATSURL
	if rb.NATSToken != "" {
		cfg.NATSToken = rb.NATSToken
	}
	env, closeEnv, _, err := harness.Start(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), func(env *app.Env) {
		cctx, cancel := harness.CleanupContext()
		defer cancel()
		harness.DeleteRunStreams(cctx, env, cfg.SubjectPrefix)
		if cfg.MySQLDSN != "" {
			// Only the bench account's rows; the prefix's Redis keys expire with their TTLs.
			for _, table := range []string{"messages", "sessions"} {
				if _, err := env.Store.DB().ExecContext(cctx, "DELETE FROM "+table+" WHERE account_id = ?", account); err != nil {
					env.Logger.Warn("bench cleanup", "table", table, "err", err)
				}
			}
		}
	})
	return env, closeEnv, err
}

// eventGen makes the bench's turn events: numbered, round-robin over the sessions, each with
// perEvent messages of ≈270 characters.
type eventGen struct {
	account  string
	sessions []string
	perEvent int
	n        atomic.Int64
}

func newEventGen(account string, sessions []string, perEvent int) *eventGen {
	return &eventGen{account: account, sessions: sessions, perEvent: perEvent}
}

const benchText = "The quick brown fox jumps over the lazy dog while we plan the trip to Lisbon in May. "

// next returns the next event's session index, id and payload.
func (g *eventGen) next() (int, string, []byte, error) {
	i := int(g.n.Add(1) - 1)
	s := i % len(g.sessions)
	now := time.Now().UTC()
	ev := contract.TurnEvent{V: 1, EventID: fmt.Sprintf("%s-e%d", g.account, i), AccountID: g.account, UserID: "u", AgentID: "main",
		SessionID: g.sessions[s], Source: "bench", SentAt: now}
	for j := 0; j < g.perEvent; j++ {
		role := contract.RoleUser
		if j%2 == 1 {
			role = contract.RoleAssistant
		}
		ev.Messages = append(ev.Messages, contract.Message{MessageID: fmt.Sprintf("e%d-m%d", i, j), Position: j, Role: role,
			Parts: []contract.Part{{Type: contract.PartText, Text: fmt.Sprintf("%d. %s", i, strings.Repeat(benchText, 3))}}, CreatedAt: now})
	}
	data, err := json.Marshal(ev)
	return s, ev.EventID, data, err
}

// ingestTarget is what the bench publishes to and how it sees what has landed.
type ingestTarget struct {
	name    string
	subject func(session int) string
	// counts fills in, per session, the messages that have landed so far.
	counts func(ctx context.Context, into []int64) error
	// stages reads where ingest's time went so far (nil: the target has no stages).
	stages func() (stageSample, error)
}

// sqlCounts reads every bench session's message_count: one indexed query over ≤ sessions rows.
func sqlCounts(env *app.Env, account string, sessions []string) (func(ctx context.Context, into []int64) error, func(), error) {
	index := make(map[string]int, len(sessions))
	for i, s := range sessions {
		index[s] = i
	}
	stmt, err := env.Store.DB().Prepare("SELECT session_id, message_count FROM sessions WHERE account_id = ?")
	if err != nil {
		return nil, nil, err
	}
	counts := func(ctx context.Context, into []int64) error {
		rows, err := stmt.QueryContext(ctx, account)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var s string
			var n int64
			if err := rows.Scan(&s, &n); err != nil {
				return err
			}
			if i, ok := index[s]; ok {
				into[i] = n
			}
		}
		return rows.Err()
	}
	return counts, func() { stmt.Close() }, nil
}

// startFloor creates the floor: a stream with the TURNS stream's settings on the same server
// (so the same durability) and a pull consumer on the membus process's connection that counts
// each event's messages per session and acks it.
func startFloor(ctx context.Context, env *app.Env, sessions []string, perEvent int) (ingestTarget, func(), error) {
	info, err := env.JS.Stream(ctx, env.Names.Stream(bus.StreamTurns))
	if err != nil {
		return ingestTarget{}, nil, err
	}
	prefix := env.Names.Prefix + "floor"
	sc := info.CachedInfo().Config
	sc.Name = env.Names.Stream("FLOOR")
	sc.Subjects = []string{prefix + ".>"}
	sc.Description = "membus bench ingest: raw JetStream floor"
	st, err := env.JS.CreateOrUpdateStream(ctx, sc)
	if err != nil {
		return ingestTarget{}, nil, err
	}
	cons, err := st.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{Durable: "floor", AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		return ingestTarget{}, nil, err
	}
	landed := make([]atomic.Int64, len(sessions))
	cc, err := cons.Consume(func(m jetstream.Msg) {
		subj := m.Subject()
		if i, err := strconv.Atoi(subj[strings.LastIndexByte(subj, '.')+1:]); err == nil && i < len(landed) {
			landed[i].Add(int64(perEvent))
		}
		_ = m.Ack()
	}, jetstream.PullMaxMessages(64))
	if err != nil {
		return ingestTarget{}, nil, err
	}
	t := ingestTarget{
		name:    "floor",
		subject: func(s int) string { return prefix + "." + strconv.Itoa(s) },
		counts: func(_ context.Context, into []int64) error {
			for i := range landed {
				into[i] = landed[i].Load()
			}
			return nil
		},
	}
	return t, func() {
		cc.Stop()
		dctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = env.JS.DeleteStream(dctx, sc.Name)
	}, nil
}

// pollInterval is how often landed counts are read while waiting; it bounds the latency
// resolution (a landed event is seen within pollInterval plus one count query).
const pollInterval = time.Millisecond

// measureRounds warms both targets up, then measures throughput p.rounds times, membus then
// the floor in each round, so that every ratio compares two phases minutes apart at most. The
// results get the round whose ratio is the median (the lower one of an even count); every
// round's ratio is printed.
func measureRounds(ctx context.Context, js jetstream.JetStream, gen *eventGen, membus, floor ingestTarget, p ingestParams, res, fl *bench.Result) error {
	stored := p.warmup
	for _, t := range []ingestTarget{membus, floor} {
		if p.warmup > 0 {
			if err := pipelined(ctx, js, gen, t, p, p.warmup, "", nil); err != nil {
				return fmt.Errorf("%s: warm-up: %w", t.name, err)
			}
		}
	}
	type round struct{ membus, floor time.Duration }
	rounds := make([]round, 0, p.rounds)
	for r := 1; r <= p.rounds; r++ {
		var rd round
		for _, x := range []struct {
			t       ingestTarget
			out     *bench.Result
			elapsed *time.Duration
		}{{membus, res, &rd.membus}, {floor, fl, &rd.floor}} {
			if err := measureThroughput(ctx, js, gen, x.t, p, stored, x.out); err != nil {
				return fmt.Errorf("%s: %w", x.t.name, err)
			}
			*x.elapsed = x.out.Elapsed
		}
		stored += p.events
		rounds = append(rounds, rd)
		if p.rounds > 1 {
			fmt.Fprintf(p.notes, "%s sync=%s round %d of %d: ratio %.3fx\n", p.backend, res.Sync, r, p.rounds, rd.floor.Seconds()/rd.membus.Seconds())
		}
	}
	ratio := func(rd round) float64 { return rd.floor.Seconds() / rd.membus.Seconds() }
	slices.SortStableFunc(rounds, func(a, b round) int { return cmp.Compare(ratio(a), ratio(b)) })
	med := rounds[(len(rounds)-1)/2]
	res.Elapsed, fl.Elapsed = med.membus, med.floor
	if p.rounds > 1 {
		fmt.Fprintf(p.notes, "%s sync=%s: median ratio %.3fx of %d rounds (lowest %.3fx, highest %.3fx)\n",
			p.backend, res.Sync, ratio(med), len(rounds), ratio(rounds[0]), ratio(rounds[len(rounds)-1]))
	}
	return nil
}

// measureThroughput publishes p.events pipelined to one target, timed until every message has
// landed, into out; stored is the events the target has landed before. For membus it prints
// where ingest's time went.
func measureThroughput(ctx context.Context, js jetstream.JetStream, gen *eventGen, t ingestTarget, p ingestParams, stored int, out *bench.Result) error {
	var before stageSample
	if t.stages != nil {
		var err error
		if before, err = settledStages(ctx, t.stages, stored); err != nil {
			return fmt.Errorf("before throughput: %w", err)
		}
	}
	var elapsed time.Duration
	if err := pipelined(ctx, js, gen, t, p, p.events, t.name+" throughput", &elapsed); err != nil {
		return fmt.Errorf("throughput: %w", err)
	}
	out.Elapsed, out.Ops, out.Msgs = elapsed, p.events*p.perEvent, p.events*p.perEvent
	fmt.Fprintf(p.notes, "%s sync=%s %s: %d events × %d messages over %d sessions, %d in flight: %.0f msg/s\n",
		p.backend, out.Sync, t.name, p.events, p.perEvent, len(gen.sessions), p.inflight, out.MsgsPerSec())
	if t.stages == nil {
		return nil
	}
	after, err := settledStages(ctx, t.stages, stored+p.events)
	if err != nil {
		return fmt.Errorf("after throughput: %w", err)
	}
	return newStageBreakdown(before, after, out.Msgs, elapsed).write(p.notes, fmt.Sprintf("%s sync=%s %s throughput", p.backend, out.Sync, t.name))
}

// measureLatency publishes paced events to one target and records each one's latency in out.
func measureLatency(ctx context.Context, js jetstream.JetStream, gen *eventGen, t ingestTarget, p ingestParams, out *bench.Result) error {
	lats, err := paced(ctx, js, gen, t, p)
	if err != nil {
		return fmt.Errorf("latency: %w", err)
	}
	out.Latencies = lats
	fmt.Fprintf(p.notes, "%s sync=%s %s: paced at %d msg/s for %s: p50 %.2f ms, p99 %.2f ms over %d events\n",
		p.backend, out.Sync, t.name, p.rate, p.duration, ms(out.Percentile(50)), ms(out.Percentile(99)), len(lats))
	return nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// publishAsync publishes one event without waiting for its PubAck.
func publishAsync(js jetstream.JetStream, subject, id string, data []byte) (jetstream.PubAckFuture, error) {
	return js.PublishMsgAsync(&nats.Msg{Subject: subject, Data: data}, jetstream.WithMsgID(id), jetstream.WithStallWait(time.Minute))
}

// settle waits for every publish's PubAck and returns the first failure.
func settle(ctx context.Context, js jetstream.JetStream, futures []jetstream.PubAckFuture) error {
	select {
	case <-js.PublishAsyncComplete():
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(2 * time.Minute):
		return errors.New("publish acks did not arrive within 2 minutes")
	}
	for _, f := range futures {
		select {
		case <-f.Ok():
		case err := <-f.Err():
			return fmt.Errorf("publish %s: %w", f.Msg().Subject, err)
		}
	}
	return nil
}

// pipelined publishes count events with up to p.inflight PubAcks outstanding and waits until
// every message has landed; elapsed (when not nil) gets the time from the first publish to
// the moment the last message was seen.
func pipelined(ctx context.Context, js jetstream.JetStream, gen *eventGen, t ingestTarget, p ingestParams, count int, label string, elapsed *time.Duration) error {
	counts := make([]int64, len(gen.sessions))
	if err := t.counts(ctx, counts); err != nil {
		return err
	}
	want := sum(counts) + int64(count*p.perEvent)
	var prog *bench.Progress
	if label != "" {
		prog = bench.NewProgress(p.progress, label, count*p.perEvent)
	}
	base := sum(counts)

	start := time.Now()
	pubErr := make(chan error, 1)
	go func() {
		futures := make([]jetstream.PubAckFuture, 0, count)
		for k := 0; k < count; k++ {
			s, id, data, err := gen.next()
			if err != nil {
				pubErr <- err
				return
			}
			f, err := publishAsync(js, t.subject(s), id, data)
			if err != nil {
				pubErr <- err
				return
			}
			futures = append(futures, f)
		}
		pubErr <- settle(ctx, js, futures)
	}()
	deadline := time.Now().Add(max(time.Minute, time.Duration(count)*10*time.Millisecond))
	published := false
	shown := 0
	for {
		if err := t.counts(ctx, counts); err != nil {
			return err
		}
		got := sum(counts)
		if d := int(got-base) - shown; d > 0 {
			prog.Add(d)
			shown += d
		}
		if got >= want {
			if elapsed != nil {
				*elapsed = time.Since(start)
			}
			prog.Done()
			if !published {
				return <-pubErr
			}
			return nil
		}
		if !published {
			select {
			case err := <-pubErr:
				if err != nil {
					return err
				}
				published = true
			default:
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d messages landed before the deadline", got-base, want-base)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(pollInterval):
		}
	}
}

// inFlight is one paced event waiting to land: its session's count target and publish time.
type inFlight struct {
	target int64
	sent   time.Time
}

// paced publishes events at p.rate messages/s for p.duration (an open loop: a late schedule
// is caught up, never slowed down) while a watcher reads the landed counts every pollInterval
// and times each event from its publish to the first read that shows it.
func paced(ctx context.Context, js jetstream.JetStream, gen *eventGen, t ingestTarget, p ingestParams) ([]time.Duration, error) {
	n := len(gen.sessions)
	interval := time.Duration(float64(time.Second) * float64(p.perEvent) / float64(p.rate))
	total := max(int(p.duration/interval), 1)
	counts := make([]int64, n)
	if err := t.counts(ctx, counts); err != nil {
		return nil, err
	}
	var (
		mu       sync.Mutex
		expected = append([]int64(nil), counts...)
		waiting  = make([][]inFlight, n)
		lats     = make([]time.Duration, 0, total)
	)
	prog := bench.NewProgress(p.progress, t.name+" latency", total)

	wctx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	watchErr := make(chan error, 1)
	allLanded := make(chan struct{})
	go func() {
		seen := make([]int64, n)
		for {
			if err := t.counts(wctx, seen); err != nil {
				watchErr <- err
				return
			}
			now := time.Now()
			mu.Lock()
			landed := 0
			for s := range waiting {
				q := waiting[s]
				for len(q) > 0 && q[0].target <= seen[s] {
					lats = append(lats, now.Sub(q[0].sent))
					q = q[1:]
					landed++
				}
				waiting[s] = q
			}
			done := len(lats) == total
			mu.Unlock()
			prog.Add(landed)
			if done {
				close(allLanded)
				return
			}
			select {
			case <-wctx.Done():
				watchErr <- wctx.Err()
				return
			case <-time.After(pollInterval):
			}
		}
	}()

	futures := make([]jetstream.PubAckFuture, 0, total)
	start := time.Now()
	for k := 0; k < total; k++ {
		if d := time.Until(start.Add(time.Duration(k) * interval)); d > 0 {
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case err := <-watchErr:
				return nil, err
			case <-time.After(d):
			}
		}
		s, id, data, err := gen.next()
		if err != nil {
			return nil, err
		}
		mu.Lock() // registered before publishing, so the watcher cannot see it land first
		expected[s] += int64(p.perEvent)
		waiting[s] = append(waiting[s], inFlight{target: expected[s], sent: time.Now()})
		mu.Unlock()
		f, err := publishAsync(js, t.subject(s), id, data)
		if err != nil {
			return nil, err
		}
		futures = append(futures, f)
	}
	if err := settle(ctx, js, futures); err != nil {
		return nil, err
	}
	select {
	case <-allLanded:
	case err := <-watchErr:
		return nil, err
	case <-time.After(time.Minute):
		mu.Lock()
		defer mu.Unlock()
		return nil, fmt.Errorf("%d of %d paced events landed within a minute of the last publish", len(lats), total)
	}
	prog.Done()
	mu.Lock()
	defer mu.Unlock()
	return lats, nil
}

func sum(xs []int64) int64 {
	var t int64
	for _, x := range xs {
		t += x
	}
	return t
}
