package bus

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// StreamLimits sizes the streams. TURNS and COMMITS never expire by age (a long outage must not
// drop acked turns); they refuse publishes once full instead.
type StreamLimits struct {
	TurnsMaxBytes   int64
	CommitsMaxBytes int64
	Duplicates      time.Duration // Nats-Msg-Id dedup window of every stream
	DLQMaxAge       time.Duration
	Replicas        int
}

// DefaultStreamLimits: TURNS 1 GiB, COMMITS 256 MiB, a 10-minute duplicate window, DLQ kept
// 30 days, one replica (deploy/ uses 3).
func DefaultStreamLimits() StreamLimits {
	return StreamLimits{
		TurnsMaxBytes:   1 << 30,
		CommitsMaxBytes: 256 << 20,
		Duplicates:      10 * time.Minute,
		DLQMaxAge:       30 * 24 * time.Hour,
		Replicas:        1,
	}
}

func (lim StreamLimits) withDefaults() StreamLimits {
	d := DefaultStreamLimits()
	if lim.TurnsMaxBytes <= 0 {
		lim.TurnsMaxBytes = d.TurnsMaxBytes
	}
	if lim.CommitsMaxBytes <= 0 {
		lim.CommitsMaxBytes = d.CommitsMaxBytes
	}
	if lim.Duplicates <= 0 {
		lim.Duplicates = d.Duplicates
	}
	if lim.DLQMaxAge <= 0 {
		lim.DLQMaxAge = d.DLQMaxAge
	}
	if lim.Replicas <= 0 {
		lim.Replicas = d.Replicas
	}
	return lim
}

// StreamConfigs returns the configuration of the four streams (exported for `membus` tools
// that print or diff the topology).
func StreamConfigs(n Names, lim StreamLimits) []jetstream.StreamConfig {
	lim = lim.withDefaults()
	workQueue := func(kind string, maxBytes int64, desc string) jetstream.StreamConfig {
		return jetstream.StreamConfig{
			Name:        n.Stream(kind),
			Description: desc,
			Subjects:    []string{n.streamSubjects(kind)},
			Retention:   jetstream.WorkQueuePolicy,
			MaxBytes:    maxBytes,
			Discard:     jetstream.DiscardNew,
			Duplicates:  lim.Duplicates,
			Storage:     jetstream.FileStorage,
			Replicas:    lim.Replicas,
		}
	}
	dlqDup := lim.Duplicates
	if dlqDup > lim.DLQMaxAge {
		dlqDup = lim.DLQMaxAge
	}
	return []jetstream.StreamConfig{
		workQueue(StreamTurns, lim.TurnsMaxBytes, "membus turn events"),
		workQueue(StreamCommits, lim.CommitsMaxBytes, "membus commit requests"),
		{
			Name:        n.Stream(StreamEvents),
			Description: "membus domain events",
			Subjects:    []string{n.streamSubjects(StreamEvents)},
			Retention:   jetstream.InterestPolicy,
			Duplicates:  lim.Duplicates,
			Storage:     jetstream.FileStorage,
			Replicas:    lim.Replicas,
		},
		{
			Name:        n.Stream(StreamDLQ),
			Description: "membus dead letters",
			Subjects:    []string{n.streamSubjects(StreamDLQ)},
			Retention:   jetstream.LimitsPolicy,
			MaxAge:      lim.DLQMaxAge,
			Duplicates:  dlqDup,
			Storage:     jetstream.FileStorage,
			Replicas:    lim.Replicas,
		},
	}
}

// EnsureStreams creates or updates the four streams. It is idempotent and safe to call from
// any number of replicas at once.
func EnsureStreams(ctx context.Context, js jetstream.JetStream, n Names, lim StreamLimits) error {
	for _, cfg := range StreamConfigs(n, lim) {
		if err := ensureStream(ctx, js, cfg); err != nil {
			return err
		}
	}
	return nil
}

func ensureStream(ctx context.Context, js jetstream.JetStream, cfg jetstream.StreamConfig) error {
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	backoff := 100 * time.Millisecond
	for {
		err := createOrUpdateStream(ctx, js, cfg)
		if err == nil {
			return nil
		}
		// A cluster seconds old has no JetStream meta leader yet: its API answers 503 or not at
		// all. Wait for it within ctx rather than fail the service's start.
		if !clusterNotReady(err) || ctx.Err() != nil {
			return fmt.Errorf("ensure stream %s: %w", cfg.Name, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("ensure stream %s: %w (JetStream was not ready)", cfg.Name, err)
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 2*time.Second)
	}
}

// ensureAttemptTimeout bounds one create-or-update, so a request lost to a cluster without a
// leader is retried instead of waiting out the caller's whole deadline.
const ensureAttemptTimeout = 5 * time.Second

func createOrUpdateStream(ctx context.Context, js jetstream.JetStream, cfg jetstream.StreamConfig) error {
	actx, cancel := context.WithTimeout(ctx, ensureAttemptTimeout)
	defer cancel()
	var err error
	// Create-or-update races with another replica doing the same: a create that lost the
	// race reports "name already in use"; the next update then succeeds.
	for attempt := 0; attempt < 3; attempt++ {
		_, err = js.CreateOrUpdateStream(actx, cfg)
		if err == nil || !errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			break
		}
	}
	return err
}

// clusterNotReady tells a JetStream that cannot answer yet from one that refuses the request.
func clusterNotReady(err error) bool {
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) && apiErr.Code == 503 {
		return true
	}
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) || errors.Is(err, nats.ErrNoResponders)
}

// defaultTimeout bounds every bus call whose context has no deadline.
const defaultTimeout = 10 * time.Second

func withDefaultTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, defaultTimeout)
}
