package bus

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Outcomes reported to RunnerConfig.OnOutcome, one per delivered message.
const (
	OutcomeAck    = "ack"    // handled, acked
	OutcomeRetry  = "retry"  // the message's own failure, counted, redelivered after a backoff
	OutcomeDLQ    = "dlq"    // dead-lettered
	OutcomeBusy   = "busy"   // a held lock, redelivered later, not counted
	OutcomeOutage = "outage" // a dependency is down, redelivered, not counted
)

// Probe is a health check of one dependency (SQL, Redis, vector store). A handler error while
// any probe fails is an outage, not the message's fault.
type Probe struct {
	Name  string
	Check func(ctx context.Context) error
}

// RunnerConfig configures one durable pull consumer and its handler.
type RunnerConfig struct {
	Service        string   // the durable is n.Consumer(Service)
	Stream         string   // kind: StreamTurns, StreamCommits or StreamEvents
	FilterSubjects []string // default: the whole stream

	Batch int // messages per Fetch; default 64
	// MaxAckPending bounds the messages delivered and not yet acked over every runner of the
	// durable; default the server's (1000). A Fetch beyond it waits for acks, so runners that
	// share the durable need at least their Batch times their number.
	MaxAckPending int
	MaxFailures   int                             // own failures before dead-lettering; default DefaultMaxFailures
	AckWait       time.Duration                   // default 30s; InProgress every AckWait/3
	Backoff       func(attempt int) time.Duration // retry and re-probe delay; default 1s doubling to 1m
	Probes        []Probe
	Logger        *slog.Logger // default slog.Default()

	Handler      Handler      // exactly one of Handler and BatchHandler
	BatchHandler BatchHandler //

	OnOutcome func(outcome string) // optional metrics hook (Outcome* constants)
	// OnAcked is an optional metrics hook called after each handled batch's successes were
	// acked, with how many there were and how long sending their acks took (they are not
	// confirmed: see ackAll).
	OnAcked func(acked int, took time.Duration)

	// Additions to the brief.
	FetchWait    time.Duration // how long one Fetch waits for messages; default 2s (bounds drain time)
	ProbeTimeout time.Duration // per probe call; default 5s
	FailureTTL   time.Duration // how long a failure count is kept; default 24h
	Replicas     int           // replicas of the failure-count bucket; default 1
}

// DefaultMaxFailures is how many failures of its own a message may have before it is
// dead-lettered (docs/design.md §2); the services' configs start from it.
const DefaultMaxFailures = 5

// ErrRunnerConfig is returned (wrapped) by NewRunner for an invalid configuration.
var ErrRunnerConfig = errors.New("invalid runner config")

// DefaultBackoff doubles from 1s up to 1 minute.
func DefaultBackoff(attempt int) time.Duration {
	if attempt < 1 {
		attempt = 1
	}
	if attempt > 7 {
		return time.Minute
	}
	d := time.Second << (attempt - 1)
	if d > time.Minute {
		d = time.Minute
	}
	return d
}

func (cfg RunnerConfig) withDefaults(n Names) RunnerConfig {
	if len(cfg.FilterSubjects) == 0 {
		cfg.FilterSubjects = []string{n.streamSubjects(cfg.Stream)}
	}
	if cfg.Batch <= 0 {
		cfg.Batch = 64
	}
	if cfg.MaxFailures <= 0 {
		cfg.MaxFailures = DefaultMaxFailures
	}
	if cfg.AckWait <= 0 {
		cfg.AckWait = 30 * time.Second
	}
	if cfg.Backoff == nil {
		cfg.Backoff = DefaultBackoff
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.FetchWait <= 0 {
		cfg.FetchWait = 2 * time.Second
	}
	if cfg.ProbeTimeout <= 0 {
		cfg.ProbeTimeout = 5 * time.Second
	}
	if cfg.FailureTTL <= 0 {
		cfg.FailureTTL = 24 * time.Hour
	}
	if cfg.Replicas <= 0 {
		cfg.Replicas = 1
	}
	return cfg
}

func (cfg RunnerConfig) validate() error {
	if !isSafeToken(cfg.Service) {
		return fmt.Errorf("%w: Service %q must match [A-Za-z0-9_-]{1,64}", ErrRunnerConfig, cfg.Service)
	}
	switch cfg.Stream {
	case StreamTurns, StreamCommits, StreamEvents:
	default:
		return fmt.Errorf("%w: Stream %q must be %s, %s or %s", ErrRunnerConfig, cfg.Stream, StreamTurns, StreamCommits, StreamEvents)
	}
	if (cfg.Handler == nil) == (cfg.BatchHandler == nil) {
		return fmt.Errorf("%w: set exactly one of Handler and BatchHandler", ErrRunnerConfig)
	}
	for _, p := range cfg.Probes {
		if p.Check == nil {
			return fmt.Errorf("%w: probe %q has no Check", ErrRunnerConfig, p.Name)
		}
	}
	return nil
}

// Runner consumes one durable pull consumer and applies membus delivery semantics (docs/design.md §2).
type Runner struct {
	js     jetstream.JetStream
	n      Names
	cfg    RunnerConfig
	log    *slog.Logger
	stream string // stream name, e.g. MEMBUS_TURNS
	kv     jetstream.KeyValue

	mu   sync.Mutex
	cons jetstream.Consumer
}

// NewRunner checks cfg, creates (idempotently) the failure-count bucket <PREFIX>_FAILURES and
// the durable pull consumer n.Consumer(cfg.Service) (MaxDeliver unlimited, explicit acks).
// The stream must exist (EnsureStreams).
func NewRunner(js jetstream.JetStream, n Names, cfg RunnerConfig) (*Runner, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults(n)
	r := &Runner{
		js:     js,
		n:      n,
		cfg:    cfg,
		log:    cfg.Logger.With("service", cfg.Service, "consumer", n.Consumer(cfg.Service), "stream", n.Stream(cfg.Stream)),
		stream: n.Stream(cfg.Stream),
	}
	ctx, cancel := context.WithTimeout(context.Background(), defaultTimeout)
	defer cancel()
	kv, err := ensureFailureBucket(ctx, js, n, cfg.FailureTTL, cfg.Replicas)
	if err != nil {
		return nil, err
	}
	r.kv = kv
	if _, err := r.ensureConsumer(ctx); err != nil {
		return nil, err
	}
	return r, nil
}

// FailureBucket is the KV bucket holding per-message failure counts.
func (n Names) FailureBucket() string { return n.Stream("FAILURES") }

func ensureFailureBucket(ctx context.Context, js jetstream.JetStream, n Names, ttl time.Duration, replicas int) (jetstream.KeyValue, error) {
	cfg := jetstream.KeyValueConfig{
		Bucket:      n.FailureBucket(),
		Description: "membus consumer runner failure counts (key: stream.seq)",
		History:     1,
		TTL:         ttl,
		Storage:     jetstream.FileStorage,
		Replicas:    replicas,
	}
	var kv jetstream.KeyValue
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		kv, err = js.CreateOrUpdateKeyValue(ctx, cfg)
		if err == nil || !errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			break
		}
	}
	if err != nil {
		return nil, fmt.Errorf("ensure KV bucket %s: %w", cfg.Bucket, err)
	}
	return kv, nil
}

func (r *Runner) ensureConsumer(ctx context.Context) (jetstream.Consumer, error) {
	cc := jetstream.ConsumerConfig{
		Durable:       r.n.Consumer(r.cfg.Service),
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       r.cfg.AckWait,
		MaxDeliver:    -1,
		DeliverPolicy: jetstream.DeliverAllPolicy,
		MaxAckPending: r.cfg.MaxAckPending,
	}
	if len(r.cfg.FilterSubjects) == 1 {
		cc.FilterSubject = r.cfg.FilterSubjects[0]
	} else {
		cc.FilterSubjects = r.cfg.FilterSubjects
	}
	cons, err := r.js.CreateOrUpdateConsumer(ctx, r.stream, cc)
	if err != nil {
		return nil, fmt.Errorf("ensure consumer %s on %s: %w", cc.Durable, r.stream, err)
	}
	r.mu.Lock()
	r.cons = cons
	r.mu.Unlock()
	return cons, nil
}

func (r *Runner) consumer() jetstream.Consumer {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cons
}

// Run fetches and handles batches until ctx is done. On cancel it finishes the in-flight batch
// (handlers get a context that is not cancelled, so durable writes complete and are acked) and
// returns nil. While a dependency is down it stops fetching and re-probes with backoff.
func (r *Runner) Run(ctx context.Context) error {
	fetchErrs := 0
	for ctx.Err() == nil {
		jms, err := r.fetch()
		if err != nil && !errors.Is(err, nats.ErrTimeout) && len(jms) == 0 {
			fetchErrs++
			r.log.Warn("fetch failed", "err", err, "attempt", fetchErrs)
			if errors.Is(err, jetstream.ErrConsumerNotFound) || errors.Is(err, jetstream.ErrConsumerDeleted) {
				cctx, cancel := context.WithTimeout(ctx, defaultTimeout)
				if _, cerr := r.ensureConsumer(cctx); cerr != nil {
					r.log.Warn("recreate consumer failed", "err", cerr)
				}
				cancel()
			}
			if !sleep(ctx, r.cfg.Backoff(fetchErrs)) {
				return nil
			}
			continue
		}
		fetchErrs = 0
		if len(jms) == 0 {
			continue
		}
		if outage := r.handleBatch(context.WithoutCancel(ctx), jms); outage {
			if !r.waitForDependencies(ctx) {
				return nil
			}
		}
	}
	return nil
}

// fetch returns what is waiting, up to Batch, at once; when nothing is, it waits up to
// FetchWait for the first message and then takes whatever else arrived with it. A plain
// Fetch(Batch) would hold a lone message until the batch filled or FetchWait passed.
func (r *Runner) fetch() ([]jetstream.Msg, error) {
	cons := r.consumer()
	collect := func(batch jetstream.MessageBatch, err error) ([]jetstream.Msg, error) {
		if err != nil {
			return nil, err
		}
		var jms []jetstream.Msg
		for jm := range batch.Messages() {
			jms = append(jms, jm)
		}
		return jms, batch.Error()
	}
	jms, err := collect(cons.FetchNoWait(r.cfg.Batch))
	if len(jms) > 0 || (err != nil && !errors.Is(err, nats.ErrTimeout)) {
		return jms, err
	}
	jms, err = collect(cons.Fetch(1, jetstream.FetchMaxWait(r.cfg.FetchWait)))
	if len(jms) == 0 || r.cfg.Batch == 1 {
		return jms, err
	}
	more, _ := collect(cons.FetchNoWait(r.cfg.Batch - 1))
	return append(jms, more...), nil
}

// delivery is one fetched message on its way through the runner.
type delivery struct {
	jm jetstream.Msg
	m  *Msg
}

// handleBatch handles one fetched batch and settles every message in it (ack, nak or
// dead-letter). It reports whether a dependency outage was detected.
func (r *Runner) handleBatch(ctx context.Context, jms []jetstream.Msg) (outage bool) {
	ds := make([]delivery, 0, len(jms))
	for _, jm := range jms {
		m := &Msg{Subject: jm.Subject(), Data: jm.Data(), Header: jm.Headers(), Stream: r.cfg.Stream, inProgress: jm.InProgress}
		if meta, err := jm.Metadata(); err == nil {
			m.StreamSeq, m.NumDelivered = meta.Sequence.Stream, meta.NumDelivered
		}
		sub, err := r.n.Parse(m.Subject)
		if err == nil && sub.Category != categoryOf(r.cfg.Stream) {
			err = fmt.Errorf("%w %q: not a %s subject", ErrBadSubject, m.Subject, categoryOf(r.cfg.Stream))
		}
		if err != nil {
			r.deadLetter(ctx, jm, m, err.Error(), 1)
			continue
		}
		m.Account, m.SessionToken = sub.Account, sub.SessionToken
		ds = append(ds, delivery{jm: jm, m: m})
	}
	if len(ds) == 0 {
		return false
	}

	stop := r.heartbeat(ds)
	defer stop()

	if r.cfg.BatchHandler != nil {
		msgs := make([]*Msg, len(ds))
		for i, d := range ds {
			msgs[i] = d.m
		}
		return r.settleBatch(ctx, ds, r.callBatch(ctx, msgs))
	}
	// A single handler is a batch of one: each message is settled before the next is handled,
	// and after an outage the rest are left unhandled and redelivered.
	for i, d := range ds {
		if r.settleBatch(ctx, ds[i:i+1], []error{r.callOne(ctx, d.m)}) {
			for _, rest := range ds[i+1:] {
				r.nakOutage(rest)
			}
			return true
		}
	}
	return false
}

// settleBatch settles the handled messages ds by their errors: the successes are acked, and
// when some failed the probes decide between an outage (every failure redelivered, not
// counted; reported) and the messages' own failures (counted, retried or dead-lettered).
func (r *Runner) settleBatch(ctx context.Context, ds []delivery, errs []error) (outage bool) {
	start := time.Now()
	if acked := r.ackAll(ctx, ds, errs); acked > 0 && r.cfg.OnAcked != nil {
		r.cfg.OnAcked(acked, time.Since(start))
	}
	var failed []delivery
	var failedErrs []error
	for i, d := range ds {
		if errs[i] == nil {
			continue // acked above
		}
		if r.settle(ctx, d, errs[i]) {
			failed = append(failed, d)
			failedErrs = append(failedErrs, errs[i])
		}
	}
	if len(failed) == 0 {
		return false
	}
	if perr := r.probe(ctx); perr != nil {
		r.log.Warn("dependency outage: pausing", "err", perr, "handler_err", failedErrs[0])
		for _, d := range failed {
			r.nakOutage(d)
		}
		return true
	}
	for i, d := range failed {
		r.countFailure(ctx, d, failedErrs[i])
	}
	return false
}

// settle acks, dead-letters or delays a message according to err and reports whether err is
// an ordinary failure still to be classified (outage or the message's own failure).
func (r *Runner) settle(ctx context.Context, d delivery, err error) (ordinary bool) {
	if err == nil {
		r.ack(ctx, d)
		return false
	}
	if IsPermanent(err) {
		failures := r.failures(ctx, d.m) + 1
		r.deadLetter(ctx, d.jm, d.m, err.Error(), failures)
		return false
	}
	if delay, ok := IsBusy(err); ok {
		if nerr := d.jm.NakWithDelay(delay); nerr != nil {
			r.log.Warn("nak (busy) failed", "subject", d.m.Subject, "seq", d.m.StreamSeq, "err", nerr)
		}
		r.outcome(OutcomeBusy)
		return false
	}
	return true
}

func (r *Runner) callOne(ctx context.Context, m *Msg) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%w: %v", ErrPanic, p)
			r.log.Error("handler panic", "subject", m.Subject, "seq", m.StreamSeq, "panic", p, "stack", stackTrace())
		}
	}()
	return r.cfg.Handler(ctx, m)
}

func (r *Runner) callBatch(ctx context.Context, msgs []*Msg) (errs []error) {
	defer func() {
		if p := recover(); p != nil {
			r.log.Error("batch handler panic", "panic", p, "stack", stackTrace())
			errs = sameError(len(msgs), fmt.Errorf("%w: %v", ErrPanic, p))
		}
	}()
	errs = r.cfg.BatchHandler(ctx, msgs)
	if len(errs) != len(msgs) {
		r.log.Error("batch handler returned the wrong number of errors", "want", len(msgs), "got", len(errs))
		return sameError(len(msgs), fmt.Errorf("batch handler returned %d errors for %d messages", len(errs), len(msgs)))
	}
	return errs
}

func sameError(n int, err error) []error {
	errs := make([]error, n)
	for i := range errs {
		errs[i] = err
	}
	return errs
}

// heartbeat sends InProgress for every message of the batch every AckWait/3 until stopped.
func (r *Runner) heartbeat(ds []delivery) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(r.cfg.AckWait / 3)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				for _, d := range ds {
					_ = d.jm.InProgress() // ErrMsgAlreadyAckd for settled messages
				}
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

// ackAll acks the batch's handled messages and returns how many it acked (or tried to).
//
// The acks are not confirmed (Ack, not DoubleAck): each is written to the connection and the
// runner moves on to its next fetch. A confirmed ack waits a round trip, and with SyncAlways a
// server fsync, per message — most of a durable batch's time, for nothing delivery relies on.
// An ack only stops a redelivery, and every handler is idempotent (docs/design.md §5): the
// durable write is done before the ack is sent, and an ack the server never applied (a
// dropped connection, a server crash before it synced the consumer's state) only means the
// message comes again after AckWait, to be deduplicated — by SQL's unique key for a turn, by
// the archive's request id for a commit, by the outbox row's id for what a handler queued.
// The acks of one connection reach the server in order and before the next fetch's request,
// and closing (or draining) the connection flushes those still buffered. The failure counts
// of redelivered messages are then forgotten concurrently (a KV round trip or two each).
func (r *Runner) ackAll(ctx context.Context, ds []delivery, errs []error) int {
	n := 0
	var redelivered []*Msg
	for i, d := range ds {
		if errs[i] != nil {
			continue
		}
		n++
		if r.sendAck(d) && d.m.NumDelivered > 1 {
			redelivered = append(redelivered, d.m)
		}
	}
	const parallel = 32
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	for _, m := range redelivered {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			r.forgetFailures(ctx, m)
		}()
	}
	wg.Wait()
	return n
}

// ack acks one handled message (unconfirmed, see ackAll) and forgets its failure count.
func (r *Runner) ack(ctx context.Context, d delivery) {
	if r.sendAck(d) {
		r.forgetFailures(ctx, d.m)
	}
}

// sendAck sends the ack of one handled message and reports whether it went out.
func (r *Runner) sendAck(d delivery) bool {
	if err := d.jm.Ack(); err != nil {
		// Redelivered later; handlers are idempotent.
		r.log.Warn("ack failed", "subject", d.m.Subject, "seq", d.m.StreamSeq, "err", err)
		return false
	}
	r.outcome(OutcomeAck)
	return true
}

func (r *Runner) nakOutage(d delivery) {
	if err := d.jm.NakWithDelay(r.cfg.Backoff(1)); err != nil {
		r.log.Warn("nak (outage) failed", "subject", d.m.Subject, "seq", d.m.StreamSeq, "err", err)
	}
	r.outcome(OutcomeOutage)
}

// countFailure records one own failure of the message and either dead-letters it (at
// MaxFailures) or retries it after the backoff.
func (r *Runner) countFailure(ctx context.Context, d delivery, herr error) {
	n, err := r.incrFailures(ctx, d.m)
	if err != nil {
		r.log.Warn("failure count unavailable: retrying without counting", "subject", d.m.Subject, "seq", d.m.StreamSeq, "err", err, "handler_err", herr)
		if nerr := d.jm.NakWithDelay(r.cfg.Backoff(1)); nerr != nil {
			r.log.Warn("nak failed", "subject", d.m.Subject, "err", nerr)
		}
		r.outcome(OutcomeRetry)
		return
	}
	if n >= r.cfg.MaxFailures {
		r.log.Warn("dead-lettering after repeated failures", "subject", d.m.Subject, "seq", d.m.StreamSeq, "failures", n, "err", herr)
		r.deadLetter(ctx, d.jm, d.m, herr.Error(), n)
		return
	}
	r.log.Info("handler failed: will retry", "subject", d.m.Subject, "seq", d.m.StreamSeq, "failures", n, "err", herr)
	if nerr := d.jm.NakWithDelay(r.cfg.Backoff(n)); nerr != nil {
		r.log.Warn("nak failed", "subject", d.m.Subject, "err", nerr)
	}
	r.outcome(OutcomeRetry)
}

// deadLetter publishes the message to the DLQ, then terminates the original. If the DLQ
// publish fails the message is redelivered later instead.
func (r *Runner) deadLetter(ctx context.Context, jm jetstream.Msg, m *Msg, reason string, failures int) {
	if err := PublishDeadLetter(ctx, r.js, r.n, m, r.cfg.Stream, reason, failures); err != nil {
		r.log.Error("dead-letter failed: will retry", "subject", m.Subject, "seq", m.StreamSeq, "err", err)
		if nerr := jm.NakWithDelay(r.cfg.Backoff(1)); nerr != nil {
			r.log.Warn("nak failed", "subject", m.Subject, "err", nerr)
		}
		r.outcome(OutcomeRetry)
		return
	}
	if err := jm.Term(); err != nil {
		r.log.Warn("term after dead-letter failed (the letter is deduplicated on redelivery)", "subject", m.Subject, "seq", m.StreamSeq, "err", err)
	}
	r.log.Warn("dead-lettered", "subject", m.Subject, "seq", m.StreamSeq, "failures", failures, "reason", headerSafe(reason))
	r.forgetFailures(ctx, m)
	r.outcome(OutcomeDLQ)
}

func (r *Runner) failureKey(m *Msg) string {
	return r.cfg.Stream + "." + strconv.FormatUint(m.StreamSeq, 10)
}

// failures returns the recorded failure count of m (0 when none or unknown).
func (r *Runner) failures(ctx context.Context, m *Msg) int {
	if m.NumDelivered <= 1 {
		return 0
	}
	kctx, cancel := context.WithTimeout(ctx, defaultTimeout)
	defer cancel()
	e, err := r.kv.Get(kctx, r.failureKey(m))
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(string(e.Value()))
	return n
}

// incrFailures adds one to m's failure count (compare-and-set, so two writers cannot both
// count from the same value) and returns the new count.
func (r *Runner) incrFailures(ctx context.Context, m *Msg) (int, error) {
	kctx, cancel := context.WithTimeout(ctx, defaultTimeout)
	defer cancel()
	key := r.failureKey(m)
	for attempt := 0; attempt < 5; attempt++ {
		e, err := r.kv.Get(kctx, key)
		switch {
		case errors.Is(err, jetstream.ErrKeyNotFound):
			if _, err := r.kv.Create(kctx, key, []byte("1")); err == nil {
				return 1, nil
			} else if !errors.Is(err, jetstream.ErrKeyExists) {
				return 0, err
			}
		case err != nil:
			return 0, err
		default:
			n, _ := strconv.Atoi(string(e.Value()))
			n++
			if _, err := r.kv.Update(kctx, key, []byte(strconv.Itoa(n)), e.Revision()); err == nil {
				return n, nil
			} else if !errors.Is(err, jetstream.ErrKeyExists) {
				return 0, err
			}
		}
	}
	return 0, fmt.Errorf("failure count %s: too many concurrent updates", key)
}

// forgetFailures deletes m's failure count once it is settled for good. A first delivery
// cannot have one, which spares the KV round trip on the common path.
func (r *Runner) forgetFailures(ctx context.Context, m *Msg) {
	if m.NumDelivered <= 1 {
		return
	}
	kctx, cancel := context.WithTimeout(ctx, defaultTimeout)
	defer cancel()
	key := r.failureKey(m)
	if _, err := r.kv.Get(kctx, key); err != nil {
		return
	}
	if err := r.kv.Delete(kctx, key); err != nil {
		r.log.Warn("delete failure count failed (it expires)", "key", key, "err", err)
	}
}

// probe runs every probe; the first failure is returned.
func (r *Runner) probe(ctx context.Context) error {
	for _, p := range r.cfg.Probes {
		pctx, cancel := context.WithTimeout(ctx, r.cfg.ProbeTimeout)
		err := p.Check(pctx)
		cancel()
		if err != nil {
			return fmt.Errorf("probe %s: %w", p.Name, err)
		}
	}
	return nil
}

// waitForDependencies re-probes with backoff, without limit, until every probe passes. It
// returns false if ctx ended first.
func (r *Runner) waitForDependencies(ctx context.Context) bool {
	for attempt := 1; ; attempt++ {
		if !sleep(ctx, r.cfg.Backoff(attempt)) {
			return false
		}
		err := r.probe(ctx)
		if err == nil {
			r.log.Info("dependencies healthy again: resuming", "probes", attempt)
			return true
		}
		r.log.Warn("dependency still down", "err", err, "attempt", attempt)
	}
}

func (r *Runner) outcome(o string) {
	if r.cfg.OnOutcome != nil {
		r.cfg.OnOutcome(o)
	}
}

// categoryOf is the subject category of a stream kind: turns for TURNS.
func categoryOf(kind string) string {
	switch kind {
	case StreamTurns:
		return categoryTurns
	case StreamCommits:
		return categoryCommits
	case StreamEvents:
		return categoryEvents
	case StreamDLQ:
		return categoryDLQ
	}
	return ""
}

// sleep waits d or until ctx ends; it reports whether the full wait happened.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
