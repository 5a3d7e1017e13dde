// Package summarizer keeps each session's cumulative overview: on archive_created it applies
// the session's unsummarized archives in seq order, under the session lock, section by section,
// so redelivery and reordering are harmless. Its scheduler builds the daily, weekly and monthly
// digests of every user and agent and runs the dedup sweep, each job in one replica only and
// once per bucket; it serves the `summary` RPC that reads the digests.
package summarizer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/membus/membus/pkg/bus"
	"github.com/membus/membus/pkg/contract"
	"github.com/membus/membus/pkg/embed"
	"github.com/membus/membus/pkg/lock"
	"github.com/membus/membus/pkg/memory"
	"github.com/membus/membus/pkg/metrics"
	"github.com/membus/membus/pkg/store"
	"github.com/membus/membus/pkg/vector"
)

// Config of the summarizer.
type Config struct {
	MaxFailures int           // default bus.DefaultMaxFailures
	BusyRetry   time.Duration // default bus.DefaultBusyRetry

	// Schedule runs the scheduler (digests and the dedup sweep) in Run; default true.
	Schedule bool
	// Daily times ("HH:MM", in Location) of the jobs (docs/design.md §6 "Summaries"): the dedup sweep
	// (01:00), the daily digest of the day before (02:00), the weekly digest of the previous
	// ISO week on Mondays (03:00), the monthly digest of the previous month on the 1st (04:00).
	DedupAt, DailyAt, WeeklyAt, MonthlyAt string
	// Location is the time zone of the schedule and of the buckets (MEMBUS_TZ); default UTC.
	Location *time.Location
	// Tick is how often the scheduler looks for due buckets; default 1m.
	Tick time.Duration
	// CatchUp bounds how far back missed buckets are built after downtime; default 31 days.
	CatchUp time.Duration
	// SweepTopK is the number of index candidates per changed memory (per side: dense and
	// keyword); default 8. SweepMax bounds the memories one sweep looks at; default 10000.
	SweepTopK, SweepMax int
	// DigestMemories and DigestArchives bound what one digest reads; default 200 and 50.
	DigestMemories, DigestArchives int
}

// Defaults returns the defaults.
func Defaults() Config {
	return Config{MaxFailures: bus.DefaultMaxFailures, BusyRetry: bus.DefaultBusyRetry, Schedule: true,
		DedupAt: "01:00", DailyAt: "02:00", WeeklyAt: "03:00", MonthlyAt: "04:00", Location: time.UTC,
		Tick: time.Minute, CatchUp: 31 * 24 * time.Hour, SweepTopK: 8, SweepMax: 10000, DigestMemories: 200, DigestArchives: 50}
}

// Validate names the bad key.
func (c Config) Validate() error {
	if c.MaxFailures <= 0 {
		return fmt.Errorf("summarizer max_failures: must be positive")
	}
	for _, t := range []struct{ key, v string }{{"dedup_at", c.DedupAt}, {"daily_at", c.DailyAt}, {"weekly_at", c.WeeklyAt}, {"monthly_at", c.MonthlyAt}} {
		if _, err := parseClock(t.v); err != nil {
			return fmt.Errorf("summarizer %s: %w", t.key, err)
		}
	}
	switch {
	case c.Location == nil:
		return fmt.Errorf("summarizer location: required (MEMBUS_TZ)")
	case c.Tick <= 0:
		return fmt.Errorf("summarizer tick: must be positive")
	case c.CatchUp <= 0:
		return fmt.Errorf("summarizer catch_up: must be positive")
	case c.SweepTopK <= 0 || c.SweepMax <= 0:
		return fmt.Errorf("summarizer sweep_top_k and sweep_max: must be positive")
	case c.DigestMemories <= 0 || c.DigestArchives <= 0:
		return fmt.Errorf("summarizer digest_memories and digest_archives: must be positive")
	}
	return nil
}

// Deps are what the summarizer needs. NC serves the summary RPC; Embedder and Vectors index
// digests as recallable memories and give the dedup sweep its candidates (without them digests
// are stored in SQL only and the sweep is skipped); Summarizer defaults to Extractive; After
// is the scheduler's timer (a fake one in tests), time.After by default.
type Deps struct {
	NC         *nats.Conn
	JS         jetstream.JetStream
	Names      bus.Names
	Store      *store.Store
	Locker     lock.Locker
	Metrics    *metrics.Metrics
	Logger     *slog.Logger
	KickOutbox func()
	Probes     []bus.Probe
	Now        func() time.Time
	Embedder   embed.Embedder
	Vectors    vector.Store
	Summarizer Summarizer
	After      func(time.Duration) <-chan time.Time
}

// Service is the summarizer.
type Service struct {
	cfg    Config
	d      Deps
	log    *slog.Logger
	runner *bus.Runner
	sched  *Scheduler

	applied   func(float64)
	overviews func(by, fallback string)
}

// New builds the service and its durable consumer on <p>.events.archive_created.>.
func New(cfg Config, d Deps) (*Service, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if d.JS == nil || d.Store == nil || d.Locker == nil || d.Metrics == nil {
		return nil, errors.New("summarizer: JS, Store, Locker and Metrics are required")
	}
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.KickOutbox == nil {
		d.KickOutbox = func() {}
	}
	if d.Summarizer == nil {
		d.Summarizer = Extractive{}
	}
	s := &Service{cfg: cfg, d: d, log: d.Logger}
	s.applied = d.Metrics.Counter("summarizer_archives_applied_total", "Archives applied to session overviews.").Add
	overviews := d.Metrics.CounterVec("summarizer_overviews_total", "Overview updates by the summarizer that wrote them (extractive, llm) and the LLM fallback reason (\"\" when none).", "by", "fallback")
	s.overviews = func(by, fb string) { overviews.WithLabelValues(by, fb).Inc() }
	sched, err := NewScheduler(cfg, d)
	if err != nil {
		return nil, err
	}
	s.sched = sched
	outcomes := d.Metrics.CounterVec("summarizer_outcomes_total", "Runner outcomes per event.", "outcome")
	probes := append([]bus.Probe{{Name: "sql", Check: d.Store.Ping}}, d.Probes...)
	r, err := bus.NewRunner(d.JS, d.Names, bus.RunnerConfig{
		Service: "summarizer", Stream: bus.StreamEvents, Batch: 8, MaxFailures: cfg.MaxFailures,
		FilterSubjects: []string{d.Names.EventFilter(contract.EventArchiveCreated)},
		Probes:         probes, Logger: d.Logger, Handler: s.handle,
		OnOutcome: func(o string) { outcomes.WithLabelValues(o).Inc() },
	})
	if err != nil {
		return nil, fmt.Errorf("summarizer consumer: %w", err)
	}
	s.runner = r
	return s, nil
}

// Run consumes archive_created events, serves the summary RPC (with Deps.NC) and runs the
// scheduler (Config.Schedule) until ctx is done.
func (s *Service) Run(ctx context.Context) error {
	if s.d.NC != nil {
		rpc, err := bus.NewRPCServer(s.d.NC, s.d.Names, "summarizer", "1.0.0")
		if err != nil {
			return err
		}
		defer func() {
			if err := rpc.Stop(); err != nil {
				s.log.Warn("stop the RPC endpoints", "err", err)
			}
		}()
		if err := rpc.Handle(OpSummary, s.handleSummaryRPC); err != nil {
			return err
		}
	}
	if s.cfg.Schedule {
		done := make(chan struct{})
		defer func() { <-done }()
		sctx, cancel := context.WithCancel(ctx)
		defer cancel()
		go func() {
			defer close(done)
			s.sched.Run(sctx)
		}()
	}
	return s.runner.Run(ctx)
}

// Scheduler returns the service's scheduler (tests and `membus` tools tick it by hand).
func (s *Service) Scheduler() *Scheduler { return s.sched }

func (s *Service) handle(ctx context.Context, m *bus.Msg) error {
	var ev contract.Event
	if err := json.Unmarshal(m.Data, &ev); err != nil {
		return bus.Permanent(fmt.Errorf("decode event: %w", err))
	}
	if ev.Kind != contract.EventArchiveCreated || ev.AccountID != m.Account || ev.SessionID == "" {
		return bus.Permanent(fmt.Errorf("not an archive_created event of account %s: %s/%s", m.Account, ev.Kind, ev.AccountID))
	}
	err := s.Apply(ctx, ev.AccountID, ev.SessionID)
	switch {
	case errors.Is(err, lock.ErrBusy):
		return bus.Busy(err, s.cfg.BusyRetry)
	case errors.Is(err, store.ErrTombstoned), errors.Is(err, store.ErrNotFound):
		return nil
	}
	return err
}

// Apply folds every archive of the session not yet summarized into its overview, in seq order.
func (s *Service) Apply(ctx context.Context, account, session string) error {
	lease, err := s.d.Locker.Acquire(ctx, lock.SessionKey(account, session), lock.SessionTTL)
	if err != nil {
		return err
	}
	defer lock.Release(context.WithoutCancel(ctx), lease, s.log)
	ctx = lease.Context()
	epoch, err := s.d.Store.AcquireEpoch(ctx, account, session)
	if err != nil {
		return err
	}
	sess, err := s.d.Store.GetSession(ctx, account, session)
	if err != nil {
		return err
	}
	archives, err := s.d.Store.Archives(ctx, account, session)
	if err != nil {
		return err
	}
	overview := sess.Overview
	done := sess.SummarizedUpto
	for _, a := range archives {
		if a.ToSeq <= done {
			continue
		}
		msgs, err := s.d.Store.ArchiveMessages(ctx, a)
		if err != nil {
			return err
		}
		in := make([]memory.Message, 0, len(msgs))
		for _, m := range msgs {
			in = append(in, memory.Message{ID: m.MessageID, Role: m.Role, Name: m.Name, Text: m.Content, CreatedAt: m.CreatedAt})
		}
		sum, err := s.d.Summarizer.UpdateOverview(ctx, overview, in)
		if err != nil {
			return fmt.Errorf("%s summarizer: %w", s.d.Summarizer.Name(), err)
		}
		s.overviews(sum.By, sum.Fallback)
		ev := contract.Event{V: contract.Version, EventID: "evt-summary_created-" + bus.MsgID(a.ID)[:32], Kind: contract.EventSummaryCreated,
			AccountID: account, UserID: a.UserID, AgentID: a.AgentID, SessionID: session, ArchiveID: a.ID, SummaryID: a.ID,
			Period: "session", At: s.d.Now().UTC()}
		b, _ := json.Marshal(ev)
		entry := store.OutboxEntry{ID: ev.EventID, Subject: s.d.Names.Event(ev.Kind, account, session), Payload: b}
		if err := s.d.Store.SetOverview(ctx, epoch, a, sum.Abstract, sum.Text, []store.OutboxEntry{entry}); err != nil {
			return err
		}
		overview, done = sum.Text, a.ToSeq
		s.applied(1)
	}
	s.d.KickOutbox()
	return nil
}
