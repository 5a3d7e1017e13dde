package bus

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/membus/membus/pkg/outbox"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// OutboxRow and OutboxStore are the outbox's row and store (package outbox), named here for
// the relay's readers.
type (
	OutboxRow   = outbox.Row
	OutboxStore = outbox.Store
)

// RelayConfig configures the outbox relay.
type RelayConfig struct {
	Interval   time.Duration // poll interval; default 200ms
	Batch      int           // rows per claim; default 100
	PruneAfter time.Duration // prune sent rows older than this; default the streams' duplicate window
	Logger     *slog.Logger  // default slog.Default()
	Now        func() time.Time
	// Subjects are the subject prefixes of the rows this relay publishes (Names.OutboxSubjects
	// of a service run alone: what its NATS user may publish); nil: every row.
	Subjects []string
}

// Relay publishes outbox rows to JetStream.
type Relay struct {
	js    jetstream.JetStream
	n     Names
	store OutboxStore
	cfg   RelayConfig
	log   *slog.Logger
	kick  chan struct{}
}

// dlqMaxData bounds the payload kept for an outbox row too large to publish.
const dlqMaxData = 64 << 10

// NewRelay returns a relay; Run starts it. Any number of relays may run against one store.
func NewRelay(js jetstream.JetStream, n Names, store OutboxStore, cfg RelayConfig) *Relay {
	if cfg.Interval <= 0 {
		cfg.Interval = 200 * time.Millisecond
	}
	if cfg.Batch <= 0 {
		cfg.Batch = 100
	}
	if cfg.PruneAfter <= 0 {
		cfg.PruneAfter = DefaultStreamLimits().Duplicates
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Relay{js: js, n: n, store: store, cfg: cfg, log: cfg.Logger.With("component", "outbox-relay"), kick: make(chan struct{}, 1)}
}

// Kick wakes the relay now (after a write) instead of waiting for the next poll.
func (r *Relay) Kick() {
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// Run publishes unsent rows until ctx is done, then returns nil. Rows stay in the store until
// their PubAck, so a crash at any point loses nothing (a row published but not yet marked is
// published again and deduplicated by its Nats-Msg-Id).
func (r *Relay) Run(ctx context.Context) error {
	t := time.NewTicker(r.cfg.Interval)
	defer t.Stop()
	lastPrune := time.Time{}
	failures := 0
	for {
		if err := r.drain(ctx); err != nil && ctx.Err() == nil {
			failures++
			r.log.Warn("outbox relay: publish failed, will retry", "err", err, "attempt", failures)
			if !sleep(ctx, DefaultBackoff(failures)) {
				return nil
			}
		} else {
			failures = 0
		}
		if now := r.cfg.Now(); now.Sub(lastPrune) >= r.cfg.PruneAfter/2 {
			if n, err := r.store.Prune(ctx, now.Add(-r.cfg.PruneAfter)); err != nil && ctx.Err() == nil {
				r.log.Warn("outbox relay: prune failed", "err", err)
			} else if n > 0 {
				r.log.Debug("outbox relay: pruned", "rows", n)
			}
			lastPrune = now
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		case <-r.kick:
		}
	}
}

// drain claims batches until the store has no more unsent rows or a publish fails.
func (r *Relay) drain(ctx context.Context) error {
	for ctx.Err() == nil {
		calls := 0
		n, err := r.store.Claim(ctx, r.cfg.Batch, r.cfg.Subjects, func(ctx context.Context, row OutboxRow) error {
			calls++
			return r.publish(ctx, row)
		})
		if err != nil {
			return fmt.Errorf("outbox claim: %w", err)
		}
		if calls < r.cfg.Batch || n < calls {
			return nil
		}
	}
	return nil
}

// publish publishes one row. A row that can never be published is dead-lettered and an error
// wrapping ErrUnpublishable is returned so the store marks it dead.
func (r *Relay) publish(ctx context.Context, row OutboxRow) error {
	if reason := r.checkSubject(row.Subject); reason != "" {
		return r.unpublishable(ctx, row, reason)
	}
	_, err := Publish(ctx, r.js, row.Subject, row.ID, row.Payload, nil)
	if err == nil {
		return nil
	}
	var apiErr *jetstream.APIError
	switch {
	case errors.Is(err, nats.ErrMaxPayload):
		return r.unpublishable(ctx, row, fmt.Sprintf("payload of %d bytes exceeds the server's max payload", len(row.Payload)))
	case errors.Is(err, nats.ErrBadSubject), errors.Is(err, jetstream.ErrInvalidSubject):
		return r.unpublishable(ctx, row, "invalid subject: "+err.Error())
	case errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamMessageExceedsMaximum:
		return r.unpublishable(ctx, row, "payload exceeds the stream's max message size: "+err.Error())
	case errors.Is(err, jetstream.ErrNoStreamResponse):
		// No stream answered. That means the subject has no stream only if the streams exist
		// (EnsureStreams ran); otherwise it is a startup order or outage problem: retry.
		if r.streamExists(ctx, row.Subject) {
			return r.unpublishable(ctx, row, "no stream stores subject "+row.Subject)
		}
		return err
	}
	return err
}

// checkSubject returns why a subject can never be published by the relay, or "".
func (r *Relay) checkSubject(subject string) string {
	if subject == "" || strings.ContainsAny(subject, " \t\r\n*>") {
		return fmt.Sprintf("invalid subject %q", subject)
	}
	sub, err := r.n.Parse(subject)
	if err != nil {
		return err.Error()
	}
	switch sub.Category {
	case categoryTurns, categoryCommits, categoryEvents:
		return ""
	}
	return fmt.Sprintf("subject %q is not a turns, commits or events subject", subject)
}

func (r *Relay) streamExists(ctx context.Context, subject string) bool {
	sub, err := r.n.Parse(subject)
	if err != nil {
		return false
	}
	var kind string
	switch sub.Category {
	case categoryTurns:
		kind = StreamTurns
	case categoryCommits:
		kind = StreamCommits
	case categoryEvents:
		kind = StreamEvents
	default:
		return false
	}
	sctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	_, err = r.js.Stream(sctx, r.n.Stream(kind))
	return err == nil
}

func (r *Relay) unpublishable(ctx context.Context, row OutboxRow, reason string) error {
	m := &Msg{Subject: row.Subject, Data: row.Payload, Stream: StreamOutbox}
	if sub, err := r.n.Parse(row.Subject); err == nil {
		m.Account, m.SessionToken = sub.Account, sub.SessionToken
	}
	if err := publishDeadLetter(ctx, r.js, r.n, m, StreamOutbox, "outbox-"+row.ID, reason, row.Attempts+1, dlqMaxData); err != nil {
		// Not dead-lettered: leave the row unsent and retry later.
		return fmt.Errorf("outbox row %s: %s; dead-letter failed: %w", row.ID, reason, err)
	}
	r.log.Warn("outbox row dead-lettered", "id", row.ID, "subject", row.Subject, "reason", reason)
	return fmt.Errorf("outbox row %s: %s: %w", row.ID, reason, ErrUnpublishable)
}
