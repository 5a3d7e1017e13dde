// Package summarizer keeps each session's cumulative overview: on archive_created it applies
// the session's unsummarized archives in seq order, under the session lock, section by section,
// so redelivery and reordering are harmless.
package summarizer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/membus/membus/pkg/bus"
	"github.com/membus/membus/pkg/contract"
	"github.com/membus/membus/pkg/lock"
	"github.com/membus/membus/pkg/memory"
	"github.com/membus/membus/pkg/metrics"
	"github.com/membus/membus/pkg/store"
)

// Config of the summarizer.
type Config struct {
	MaxFailures int           // default 5
	BusyRetry   time.Duration // default 2s
}

// Defaults returns the defaults.
func Defaults() Config { return Config{MaxFailures: 5, BusyRetry: 2 * time.Second} }

// Validate names the bad key.
func (c Config) Validate() error {
	if c.MaxFailures <= 0 {
		return fmt.Errorf("summarizer max_failures: must be positive")
	}
	return nil
}

// Deps are what the summarizer needs.
type Deps struct {
	JS         jetstream.JetStream
	Names      bus.Names
	Store      *store.Store
	Locker     lock.Locker
	Metrics    *metrics.Metrics
	Logger     *slog.Logger
	KickOutbox func()
	Probes     []bus.Probe
	Now        func() time.Time
}

// Service is the summarizer.
type Service struct {
	cfg    Config
	d      Deps
	log    *slog.Logger
	runner *bus.Runner

	applied func(float64)
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
	s := &Service{cfg: cfg, d: d, log: d.Logger}
	s.applied = d.Metrics.Counter("summarizer_archives_applied_total", "Archives applied to session overviews.").Add
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

// Run consumes until ctx is done.
func (s *Service) Run(ctx context.Context) error { return s.runner.Run(ctx) }

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
	defer lease.Release(context.WithoutCancel(ctx))
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
	overview := Parse(sess.Overview)
	done := sess.SummarizedUpto
	for _, a := range archives {
		if a.ToSeq <= done {
			continue
		}
		msgs, err := s.d.Store.MessagesBySeq(ctx, account, session, a.FromSeq, a.ToSeq)
		if err != nil {
			return err
		}
		in := make([]memory.Message, 0, len(msgs))
		for _, m := range msgs {
			in = append(in, memory.Message{ID: m.MessageID, Role: m.Role, Name: m.Name, Text: m.Content, CreatedAt: m.CreatedAt})
		}
		overview = overview.Update(in)
		text := overview.String()
		ev := contract.Event{V: contract.Version, EventID: "evt-summary_created-" + bus.MsgID(a.ID)[:32], Kind: contract.EventSummaryCreated,
			AccountID: account, UserID: a.UserID, AgentID: a.AgentID, SessionID: session, ArchiveID: a.ID, SummaryID: a.ID,
			Period: "session", At: s.d.Now().UTC()}
		b, _ := json.Marshal(ev)
		entry := store.OutboxEntry{ID: ev.EventID, Subject: s.d.Names.Event(ev.Kind, account, session), Payload: b}
		if err := s.d.Store.SetOverview(ctx, epoch, a, overview.Abstract(), text, []store.OutboxEntry{entry}); err != nil {
			return err
		}
		done = a.ToSeq
		s.applied(1)
	}
	s.d.KickOutbox()
	return nil
}
