// Package extract runs commits: under the session lock it archives a range of a session's
// messages, extracts long-term memories from them, resolves conflicts and duplicates under the
// user's merge lock, writes memory rows and then vectors. Each step is a recorded archive state
// (archived → extracted → indexed), so a redelivered or crashed commit resumes where it stopped.
// It also serves the synchronous commit RPC, and memories.import (`membus import`), since it is
// the one writer of memories.
package extract

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
	"github.com/membus/membus/pkg/session"
	"github.com/membus/membus/pkg/store"
	"github.com/membus/membus/pkg/vector"
)

// Config of the extract service.
type Config struct {
	KeepRecent    int           // messages kept active after an automatic commit; default contract.DefaultKeepRecent
	MaxFailures   int           // default bus.DefaultMaxFailures
	CommitTimeout time.Duration // default wait of a synchronous commit; default contract.DefaultCommitTimeout
	BusyRetry     time.Duration // redelivery delay when the session lock is held; default bus.DefaultBusyRetry
}

// Defaults returns the defaults of docs/design.md §5–§6.
func Defaults() Config {
	return Config{KeepRecent: contract.DefaultKeepRecent, MaxFailures: bus.DefaultMaxFailures,
		CommitTimeout: contract.DefaultCommitTimeout, BusyRetry: bus.DefaultBusyRetry}
}

// Validate names the bad key.
func (c Config) Validate() error {
	if err := contract.CheckKeepRecent(c.KeepRecent); err != nil {
		return fmt.Errorf("keep_recent: %w", err)
	}
	if c.CommitTimeout <= 0 {
		return fmt.Errorf("commit_timeout: must be positive")
	}
	return nil
}

// Deps are what extract needs.
type Deps struct {
	NC         *nats.Conn
	JS         jetstream.JetStream
	Names      bus.Names
	Store      *store.Store
	Sessions   session.Store // its cache is invalidated when messages are archived (nil: session.NewSQL(Store))
	Locker     lock.Locker
	Extractor  memory.Extractor
	Embedder   embed.Embedder
	Vectors    vector.Store
	Metrics    *metrics.Metrics
	Logger     *slog.Logger
	KickOutbox func()
	Probes     []bus.Probe
	Now        func() time.Time
}

// Service is the extract service.
type Service struct {
	cfg    Config
	d      Deps
	log    *slog.Logger
	runner *bus.Runner
	// completed tells this process's synchronous commits that their commit is done.
	completed completions

	archives, memoriesWritten, superseded, deduped func(float64)
	commitSeconds                                  func(float64)
}

// New builds the service and its durable consumer on <p>.commits.>.
func New(cfg Config, d Deps) (*Service, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if d.JS == nil || d.NC == nil || d.Store == nil || d.Locker == nil || d.Embedder == nil || d.Vectors == nil || d.Metrics == nil {
		return nil, errors.New("extract: NC, JS, Store, Locker, Embedder, Vectors and Metrics are required")
	}
	if d.Extractor == nil {
		d.Extractor = memory.NewHeuristic()
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
	if d.Sessions == nil {
		d.Sessions = session.NewSQL(d.Store)
	}
	d.Extractor = timedExtractor{d.Extractor, d.Metrics.Histogram("extract_extraction_seconds", "Time to extract memory candidates from one archive (the extractor alone).").Observe}
	s := &Service{cfg: cfg, d: d, log: d.Logger}
	m := d.Metrics
	s.archives = m.Counter("extract_archives_total", "Archives created.").Add
	s.memoriesWritten = m.Counter("extract_memories_written_total", "Memories written (new or merged).").Add
	s.superseded = m.Counter("extract_memories_superseded_total", "Memories superseded by a conflicting newer one.").Add
	s.deduped = m.Counter("extract_memories_deduplicated_total", "Candidates merged into an existing memory.").Add
	s.commitSeconds = m.Histogram("extract_commit_seconds", "Time to run one commit.").Observe
	outcomes := m.CounterVec("extract_outcomes_total", "Runner outcomes per commit request.", "outcome")
	probes := append([]bus.Probe{{Name: "sql", Check: d.Store.Ping}}, d.Probes...)
	r, err := bus.NewRunner(d.JS, d.Names, bus.RunnerConfig{
		Service: "extract", Stream: bus.StreamCommits, Batch: 1, MaxFailures: cfg.MaxFailures,
		AckWait: time.Minute, Probes: probes, Logger: d.Logger, Handler: s.handle,
		OnOutcome: func(o string) { outcomes.WithLabelValues(o).Inc() },
	})
	if err != nil {
		return nil, fmt.Errorf("extract consumer: %w", err)
	}
	s.runner = r
	return s, nil
}

// Run consumes commit requests and serves the commit RPC until ctx is done.
func (s *Service) Run(ctx context.Context) error {
	rpc, err := bus.NewRPCServer(s.d.NC, s.d.Names, "extract", "1.0.0")
	if err != nil {
		return err
	}
	defer func() {
		if err := rpc.Stop(); err != nil {
			s.log.Warn("stop the RPC endpoints", "err", err)
		}
	}()
	if err := rpc.Handle("commit", s.handleCommitRPC); err != nil {
		return err
	}
	if err := rpc.Handle("memories.import", s.handleImportRPC); err != nil {
		return err
	}
	return s.runner.Run(ctx)
}

func (s *Service) handle(ctx context.Context, m *bus.Msg) error {
	var req contract.CommitRequest
	if err := json.Unmarshal(m.Data, &req); err != nil {
		return bus.Permanent(fmt.Errorf("decode commit request: %w", err))
	}
	if err := req.Validate(); err != nil {
		return bus.Permanent(err)
	}
	if req.AccountID != m.Account || bus.SessionToken(req.SessionID) != m.SessionToken {
		return bus.Permanent(fmt.Errorf("commit request for %s/%s disagrees with its subject %s", req.AccountID, req.SessionID, m.Subject))
	}
	start := time.Now()
	err := s.Commit(ctx, req)
	if errors.Is(err, lock.ErrBusy) {
		return bus.Busy(err, s.cfg.BusyRetry)
	}
	if errors.Is(err, store.ErrTombstoned) {
		s.log.Info("commit dropped: the user or session was erased", "account", req.AccountID, "session", req.SessionID)
		return nil
	}
	if err == nil {
		s.commitSeconds(time.Since(start).Seconds())
	}
	return err
}

// eventID is the deterministic id (and Nats-Msg-Id) of an event.
func eventID(kind string, parts ...string) string {
	return "evt-" + kind + "-" + bus.MsgID(parts...)[:32]
}

func (s *Service) event(ev contract.Event) store.OutboxEntry {
	ev.V = contract.Version
	if ev.At.IsZero() {
		ev.At = s.d.Now().UTC()
	}
	b, _ := json.Marshal(ev)
	return store.OutboxEntry{ID: ev.EventID, Subject: s.d.Names.Event(ev.Kind, ev.AccountID, ev.SessionID), Payload: b}
}
