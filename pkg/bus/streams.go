package bus

import (
	"context"
	"errors"
	"fmt"
	"time"

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
	var err error
	// Create-or-update races with another replica doing the same: a create that lost the
	// race reports "name already in use"; the next update then succeeds.
	for attempt := 0; attempt < 3; attempt++ {
		_, err = js.CreateOrUpdateStream(ctx, cfg)
		if err == nil || !errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("ensure stream %s: %w", cfg.Name, err)
	}
	return nil
}

// defaultTimeout bounds every bus call whose context has no deadline.
const defaultTimeout = 10 * time.Second

func withDefaultTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, defaultTimeout)
}
