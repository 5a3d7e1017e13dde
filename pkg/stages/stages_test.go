package stages_test

import (
	"context"
	"testing"
	"time"

	"github.com/membus/membus/pkg/stages"
)

func TestTimer(t *testing.T) {
	tests := []struct {
		name string
		run  func(ctx context.Context)
		want map[string]time.Duration
	}{
		{"a stage timed twice sums", func(ctx context.Context) {
			tm := stages.FromContext(ctx)
			tm.Add("sql", time.Millisecond)
			tm.Add("sql", 2*time.Millisecond)
			tm.Add("redis", time.Microsecond)
		}, map[string]time.Duration{"sql": 3 * time.Millisecond, "redis": time.Microsecond}},
		{"Since adds the elapsed time and returns the next start", func(ctx context.Context) {
			tm := stages.FromContext(ctx)
			start := time.Now().Add(-5 * time.Millisecond)
			next := tm.Since("decode", start)
			tm.Add("decode", -next.Sub(start)) // leaves exactly zero if Since added next−start
		}, map[string]time.Duration{"decode": 0}},
		{"nothing timed, nothing reported", func(context.Context) {}, map[string]time.Duration{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tm := &stages.Timer{}
			tc.run(stages.NewContext(context.Background(), tm))
			got := tm.Durations()
			if len(got) != len(tc.want) {
				t.Fatalf("durations %v, want %v", got, tc.want)
			}
			for k, v := range tc.want {
				if d, ok := got[k]; !ok || d != v {
					t.Errorf("%s = %v (present %v), want %v", k, d, ok, v)
				}
			}
		})
	}
}

func TestNoTimerRecordsNothing(t *testing.T) {
	ctx := context.Background()
	tm := stages.FromContext(ctx)
	if tm != nil {
		t.Fatalf("FromContext of a bare context = %v, want nil", tm)
	}
	tm.Add("sql", time.Second) // must not panic
	if next := tm.Since("sql", time.Now()); next.IsZero() {
		t.Error("Since on a nil Timer returned the zero time; callers chain it as the next start")
	}
	if d := tm.Durations(); d != nil {
		t.Errorf("Durations of nil = %v", d)
	}
}
