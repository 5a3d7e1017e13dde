// Package ingest turns TurnEvents from <p>.turns.> into durable session history: it validates
// and normalises each event, stores a fetched batch in one SQL transaction (dedup, seq, pending
// tokens, commit trigger into the outbox) and only then lets the runner ack.
package ingest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"
	"unicode/utf8"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/membus/membus/pkg/bus"
	"github.com/membus/membus/pkg/config"
	"github.com/membus/membus/pkg/contract"
	"github.com/membus/membus/pkg/metrics"
	"github.com/membus/membus/pkg/session"
	"github.com/membus/membus/pkg/stages"
	"github.com/membus/membus/pkg/store"
)

// Config of the ingest service.
type Config struct {
	CommitTokenThreshold int // default contract.DefaultCommitTokenThreshold (docs/design.md §5)
	// Batch is the turn events of one fetch, stored in one SQL transaction (one commit, one
	// fsync); default 512. The durable's MaxAckPending is at least twice Batch × Workers (the
	// server's default of 1000 would hold back one worker's fetch until the other acks).
	Batch       int
	MaxFailures int // default bus.DefaultMaxFailures
	// Workers are the fetch loops of one process on the shared durable: while one batch waits
	// for its SQL commit (an fsync), another is decoded and written. Default 2.
	Workers               int
	BypassSessionPatterns []string // glob patterns of session ids never captured
	AgentPrefix           string   // prefix of OpenClaw agent ids (<prefix>_<id>)
	RedactPatterns        []string // extra regular expressions redacted before storing
	// IdleCommit commits a session that holds uncommitted messages and has had no new turn for
	// this long (kind idle, everything archived), so short chats become memory too. Default
	// config.DefaultIdleCommit; 0 disables it.
	IdleCommit time.Duration
}

// Defaults returns the defaults of docs/design.md §6.
func Defaults() Config {
	return Config{CommitTokenThreshold: contract.DefaultCommitTokenThreshold, Batch: 512, MaxFailures: bus.DefaultMaxFailures, Workers: 2,
		IdleCommit: config.DefaultIdleCommit}
}

// Validate names the bad key.
func (c Config) Validate() error {
	if _, err := NewCapturer(c.RedactPatterns); err != nil {
		return err
	}
	if err := contract.CheckCommitTokenThreshold(c.CommitTokenThreshold); err != nil {
		return fmt.Errorf("commit_token_threshold: %w", err)
	}
	if err := config.CheckIdleCommit(c.IdleCommit); err != nil {
		return fmt.Errorf("idle_commit: %w", err)
	}
	return nil
}

// Deps are what ingest needs.
type Deps struct {
	JS    jetstream.JetStream
	Names bus.Names
	Store *store.Store
	// Sessions is where history is written (SQL, and the Redis hot cache when set); nil
	// means session.NewSQL(Store).
	Sessions session.Store
	Metrics  *metrics.Metrics
	Logger   *slog.Logger
	// KickOutbox wakes the outbox relay after a batch queued a commit request (optional).
	KickOutbox func()
	// Probes of the dependencies besides SQL (Redis), for outage detection.
	Probes []bus.Probe
}

// Service is the ingest service.
type Service struct {
	cfg     Config
	deps    Deps
	runners []*bus.Runner
	log     *slog.Logger

	capture                                                       *Capturer
	stored, duplicates, skipped, commits, idleCommits, redactions func(float64)
	batchLatency                                                  func(float64)
	stages                                                        stageMetrics
}

// New builds the service and its durable consumer.
func New(cfg Config, deps Deps) (*Service, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if deps.JS == nil || deps.Store == nil || deps.Metrics == nil {
		return nil, errors.New("ingest: JS, Store and Metrics are required")
	}
	if deps.Logger == nil {
		deps.Logger = slog.Default()
	}
	if deps.Sessions == nil {
		deps.Sessions = session.NewSQL(deps.Store)
	}
	capture, _ := NewCapturer(cfg.RedactPatterns) // validated above
	s := &Service{cfg: cfg, deps: deps, log: deps.Logger, capture: capture}
	m := deps.Metrics
	s.redactions = m.Counter("ingest_redactions_total", "Secrets redacted before storing.").Add
	s.stored = m.Counter("ingest_messages_stored_total", "Messages stored.").Add
	s.duplicates = m.Counter("ingest_messages_duplicate_total", "Duplicate messages acked without storing.").Add
	s.skipped = m.Counter("ingest_events_skipped_total", "Events skipped (heartbeats, bypassed sessions, erased).").Add
	s.commits = m.Counter("ingest_commit_requests_total", "Commit requests queued by the threshold.").Add
	s.idleCommits = m.Counter("ingest_idle_commit_requests_total", "Commit requests queued for sessions idle longer than idle_commit.").Add
	s.batchLatency = m.Histogram("ingest_batch_seconds", "Time to store one fetched batch.").Observe
	s.stages = newStageMetrics(m)
	outcomes := m.CounterVec("ingest_outcomes_total", "Runner outcomes per message.", "outcome")
	probes := append([]bus.Probe{{Name: "sql", Check: deps.Store.Ping}}, deps.Probes...)
	for range max(cfg.Workers, 1) {
		r, err := bus.NewRunner(deps.JS, deps.Names, bus.RunnerConfig{
			Service: "ingest", Stream: bus.StreamTurns, Batch: cfg.Batch, MaxFailures: cfg.MaxFailures,
			MaxAckPending: max(1000, 2*cfg.Batch*max(cfg.Workers, 1)),
			Probes:        probes, Logger: deps.Logger, BatchHandler: s.handleBatch,
			OnOutcome: func(o string) { outcomes.WithLabelValues(o).Inc() },
			OnAcked:   s.stages.acked,
		})
		if err != nil {
			return nil, fmt.Errorf("ingest consumer: %w", err)
		}
		s.runners = append(s.runners, r)
	}
	return s, nil
}

// Run consumes until ctx is done, then drains every worker. The idle sweep runs beside them.
func (s *Service) Run(ctx context.Context) error {
	if s.cfg.IdleCommit > 0 {
		sweepCtx, stop := context.WithCancel(ctx)
		defer stop()
		go s.sweepIdle(sweepCtx)
	}
	errs := make(chan error, len(s.runners))
	for _, r := range s.runners {
		go func() { errs <- r.Run(ctx) }()
	}
	var first error
	for range s.runners {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}

// sweepIdle queues an idle commit for every session idle longer than IdleCommit. Every
// replica sweeps; the store hands each idle session to one of them (RequestIdleCommits).
func (s *Service) sweepIdle(ctx context.Context) {
	every := min(max(s.cfg.IdleCommit/4, 100*time.Millisecond), 30*time.Second)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for {
			reqs, err := s.deps.Store.RequestIdleCommits(ctx, time.Now().Add(-s.cfg.IdleCommit), 100, idleRequest(s.deps.Names, time.Now))
			if err != nil {
				if ctx.Err() == nil {
					s.log.Warn("idle commit sweep failed; retried at the next tick", "err", err)
				}
				break
			}
			for _, r := range reqs {
				s.log.Debug("idle commit requested", "request", r.ID, "subject", r.Subject)
			}
			s.idleCommits(float64(len(reqs)))
			if len(reqs) > 0 && s.deps.KickOutbox != nil {
				s.deps.KickOutbox()
			}
			if len(reqs) < 100 {
				break
			}
		}
	}
}

// handleBatch stores one fetched batch (storeBatch) and records the time it took per stage
// (stages.go).
func (s *Service) handleBatch(ctx context.Context, msgs []*bus.Msg) []error {
	start := time.Now()
	tm := &stages.Timer{}
	errs := s.storeBatch(stages.NewContext(ctx, tm), tm, msgs)
	s.stages.observe(tm, time.Since(start))
	return errs
}

// storeBatch decodes every message, rejects the bad ones permanently (the rest of the batch
// still lands) and stores the good ones in one transaction. The stages it and the stores do
// are timed into tm.
func (s *Service) storeBatch(ctx context.Context, tm *stages.Timer, msgs []*bus.Msg) []error {
	start := time.Now()
	errs := make([]error, len(msgs))
	var turns []store.Turn
	var idx []int
	for i, m := range msgs {
		t0 := time.Now()
		ev, skip, err := s.decode(m)
		t0 = tm.Since(StageDecode, t0)
		switch {
		case err != nil:
			errs[i] = bus.Permanent(err)
		case skip:
			s.skipped(1)
		default:
			t, ok := s.turn(ev, m.StreamSeq)
			t0 = tm.Since(StageRedact, t0)
			if !ok {
				s.skipped(1)
				continue
			}
			if m.NumDelivered > 1 {
				t.Messages = s.unseen(ctx, t)
				tm.Since(StageDedupCheck, t0)
			}
			turns = append(turns, t)
			idx = append(idx, i)
		}
	}
	if len(turns) == 0 {
		return errs
	}
	res, err := s.deps.Sessions.ApplyTurns(ctx, commitTrigger(s.deps.Names, s.cfg.CommitTokenThreshold, time.Now), turns)
	if err != nil {
		for _, i := range idx {
			errs[i] = fmt.Errorf("store batch: %w", err)
		}
		return errs
	}
	kicked := false
	for k, r := range res {
		s.stored(float64(r.Stored))
		s.duplicates(float64(r.Duplicates))
		if r.Tombstoned {
			s.skipped(1)
		}
		if r.Foreign {
			// Bad input, not a fault: the rest of the batch is stored, this turn dead-lettered.
			t := turns[k]
			errs[idx[k]] = bus.Permanent(fmt.Errorf("%w: session %q of account %q belongs to another user than the turn's %q (a session is one user's)",
				contract.ErrInvalid, t.SessionID, t.AccountID, t.UserID))
		}
		if r.CommitUpto > 0 {
			s.commits(1)
			kicked = true
		}
	}
	if kicked && s.deps.KickOutbox != nil {
		s.deps.KickOutbox()
	}
	s.batchLatency(time.Since(start).Seconds())
	return errs
}

// unseen drops from a redelivered turn the messages whose dedup key says they were applied —
// only an optimisation: the turn itself still goes to the store (its stream seq is recorded),
// and a dedup miss leaves the decision to SQL's unique key.
func (s *Service) unseen(ctx context.Context, t store.Turn) []store.Message {
	out := t.Messages[:0:0]
	for _, m := range t.Messages {
		if s.deps.Sessions.SeenRecently(ctx, t.AccountID, t.SessionID, m.MessageID) {
			s.duplicates(1)
			continue
		}
		out = append(out, m)
	}
	return out
}

// decode validates one TurnEvent against its subject; skip is set for an event nothing is
// stored of (a heartbeat, a bypassed session).
func (s *Service) decode(m *bus.Msg) (ev contract.TurnEvent, skip bool, err error) {
	// encoding/json silently turns invalid UTF-8 into U+FFFD, so the raw payload is checked
	// first: such text would otherwise be stored altered instead of dead-lettered.
	if !utf8.Valid(m.Data) {
		return ev, false, fmt.Errorf("%w: payload is not valid UTF-8", contract.ErrInvalid)
	}
	if err := json.Unmarshal(m.Data, &ev); err != nil {
		return ev, false, fmt.Errorf("decode turn event: %w", err)
	}
	if err := ev.Validate(); err != nil {
		return ev, false, err
	}
	if ev.Source == contract.SourceOpenClaw {
		// OpenClaw's ids are mapped to storage ids exactly as OpenViking's plugin does (docs/design.md §3);
		// the publisher names the subject after the storage id.
		ev.SessionID = contract.OpenClawSessionID(ev.SessionID, ev.SessionKey)
		ev.AgentID = contract.OpenClawAgentID(ev.SessionKey, ev.AgentID, s.cfg.AgentPrefix)
	}
	if ev.AccountID != m.Account {
		return ev, false, fmt.Errorf("account_id %q disagrees with the subject's account %q", ev.AccountID, m.Account)
	}
	if bus.SessionToken(ev.SessionID) != m.SessionToken {
		return ev, false, fmt.Errorf("session_id %q disagrees with the subject's session token %q", ev.SessionID, m.SessionToken)
	}
	if ev.Turn.IsHeartbeat || bypassed(ev.SessionID, s.cfg.BypassSessionPatterns) {
		return ev, true, nil
	}
	return ev, false, nil
}

// turn renders a decoded event into a store.Turn: the messages after the host's pre-prompt,
// each captured (injected blocks stripped, secrets redacted). ok is false when no message is
// left to store.
func (s *Service) turn(ev contract.TurnEvent, streamSeq uint64) (store.Turn, bool) {
	t := store.Turn{
		AccountID: ev.AccountID, UserID: ev.UserID, AgentID: ev.AgentID, SessionID: ev.SessionID,
		SessionKey: ev.SessionKey, EventID: ev.EventID, StreamSeq: streamSeq, KeepRecent: ev.Turn.KeepRecent,
	}
	if th := ev.Turn.CommitTokenThreshold; th != nil {
		t.Threshold = clamp(*th, contract.MinCommitTokenThreshold, contract.MaxCommitTokenThreshold)
	}
	msgs := ev.Messages
	if n := ev.Turn.PrePromptMessageCount; n != nil && *n > 0 {
		msgs = afterPrePrompt(msgs, *n)
	}
	for _, cm := range msgs {
		sm, n, ok := s.capture.Capture(cm)
		s.redactions(float64(n))
		if !ok {
			continue
		}
		t.Messages = append(t.Messages, sm)
	}
	return t, len(t.Messages) > 0
}

func clamp(v, lo, hi int) int {
	return max(lo, min(v, hi))
}
