// Package stages times the stages one unit of work passes through (an ingest batch: decode,
// redact, the SQL transaction, the Redis writes) across the packages that do them. The caller
// puts a Timer into the context of that one call, the way a trace span travels, each package
// adds the time of its own stages to it, and the caller reads the totals afterwards. A context
// without a Timer records nothing; a stage then costs a context lookup and a clock read.
//
// The context carries it, rather than a parameter, so the store and session interfaces that
// every adapter and conformance suite implement keep their signatures for what is a
// measurement, not an input.
package stages

import (
	"context"
	"sync"
	"time"
)

// Timer sums durations per stage name. Safe for concurrent use; a nil *Timer records nothing.
type Timer struct {
	mu sync.Mutex
	d  map[string]time.Duration
}

type ctxKey struct{}

// NewContext returns ctx carrying t.
func NewContext(ctx context.Context, t *Timer) context.Context {
	return context.WithValue(ctx, ctxKey{}, t)
}

// FromContext returns the Timer ctx carries, or nil.
func FromContext(ctx context.Context) *Timer {
	t, _ := ctx.Value(ctxKey{}).(*Timer)
	return t
}

// Add adds d to stage.
func (t *Timer) Add(stage string, d time.Duration) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.d == nil {
		t.d = make(map[string]time.Duration, 8)
	}
	t.d[stage] += d
}

// Since adds the time from start to now to stage and returns now, the start of a next stage.
func (t *Timer) Since(stage string, start time.Time) time.Time {
	now := time.Now()
	t.Add(stage, now.Sub(start))
	return now
}

// Durations returns a copy of the totals: one entry per stage that was timed at least once.
func (t *Timer) Durations() map[string]time.Duration {
	if t == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[string]time.Duration, len(t.d))
	for k, v := range t.d {
		out[k] = v
	}
	return out
}
