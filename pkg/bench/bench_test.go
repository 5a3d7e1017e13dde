package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func msDurations(ms ...int) []time.Duration {
	out := make([]time.Duration, len(ms))
	for i, m := range ms {
		out[i] = time.Duration(m) * time.Millisecond
	}
	return out
}

func TestPercentile(t *testing.T) {
	hundred := make([]time.Duration, 100)
	for i := range hundred {
		hundred[99-i] = time.Duration(i+1) * time.Millisecond // unsorted on purpose
	}
	tests := []struct {
		name string
		lats []time.Duration
		p    float64
		want time.Duration
	}{
		{"p50 of 1..100 ms", hundred, 50, 50 * time.Millisecond},
		{"p95 of 1..100 ms", hundred, 95, 95 * time.Millisecond},
		{"p99 of 1..100 ms", hundred, 99, 99 * time.Millisecond},
		{"p100 is the maximum", hundred, 100, 100 * time.Millisecond},
		{"p0 is the minimum", hundred, 0, 1 * time.Millisecond},
		{"nearest rank rounds up", msDurations(10, 20, 30, 40), 50, 20 * time.Millisecond},
		{"p99 of four picks the largest", msDurations(40, 10, 30, 20), 99, 40 * time.Millisecond},
		{"single value", msDurations(7), 50, 7 * time.Millisecond},
		{"no latencies", nil, 50, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := (Result{Latencies: tc.lats}).Percentile(tc.p); got != tc.want {
				t.Fatalf("got %v want %v", got, tc.want)
			}
		})
	}
}

func TestLineFields(t *testing.T) {
	floor := &Result{Ops: 200, Elapsed: time.Second, Latencies: msDurations(1, 2, 3, 4)}
	full := Result{Bench: "ingest", Backend: "embedded", Sync: "always", Embedder: "hash-v1-384", Size: 1000,
		Ops: 100, Msgs: 300, Elapsed: time.Second, Latencies: msDurations(10, 20, 30, 40), RSSMB: 42.25, Floor: floor}

	tests := []struct {
		name    string
		r       Result
		want    map[string]any
		omitted []string
	}{
		{"every field when everything applies", full, map[string]any{
			"bench": "ingest", "backend": "embedded", "sync": "always", "embedder": "hash-v1-384", "size": 1000.0,
			"ops_per_sec": 100.0, "msgs_per_sec": 300.0, "p50_ms": 20.0, "p95_ms": 40.0, "p99_ms": 40.0,
			"floor_ops_per_sec": 200.0, "floor_p50_ms": 2.0, "floor_p99_ms": 4.0, "ratio": 0.5, "rss_mb": 42.3,
		}, nil},
		{"no floor, no messages, no names", Result{Bench: "recall", Ops: 10, Elapsed: 2 * time.Second, Latencies: msDurations(5)},
			map[string]any{"bench": "recall", "ops_per_sec": 5.0, "p50_ms": 5.0},
			[]string{"backend", "sync", "embedder", "size", "msgs_per_sec", "floor_ops_per_sec", "floor_p50_ms", "floor_p99_ms", "ratio", "rss_mb"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := WriteJSON(&buf, tc.r); err != nil {
				t.Fatal(err)
			}
			if strings.Count(buf.String(), "\n") != 1 {
				t.Fatalf("want one line, got %q", buf.String())
			}
			var got map[string]any
			if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
				t.Fatalf("not JSON: %v: %s", err, buf.String())
			}
			for k, v := range tc.want {
				if got[k] != v {
					t.Errorf("%s = %v (%T), want %v", k, got[k], got[k], v)
				}
			}
			for _, k := range tc.omitted {
				if _, ok := got[k]; ok {
					t.Errorf("%s present, want omitted", k)
				}
			}
			for k := range got {
				if !contains(lineKeys, k) {
					t.Errorf("unexpected field %s", k)
				}
			}
		})
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestWriteJSONLinesAndTable(t *testing.T) {
	rs := []Result{
		{Bench: "ingest", Backend: "embedded", Sync: "always", Ops: 10, Elapsed: time.Second, Latencies: msDurations(1),
			Floor: &Result{Ops: 20, Elapsed: time.Second}},
		{Bench: "ingest", Backend: "embedded", Sync: "interval", Ops: 30, Elapsed: time.Second, Latencies: msDurations(1)},
	}
	var js bytes.Buffer
	if err := WriteJSON(&js, rs...); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(js.String()), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], `{"bench":"ingest","backend":"embedded","sync":"always"`) {
		t.Fatalf("JSON lines not one per result in docs/design.md §10 order:\n%s", js.String())
	}
	var tab bytes.Buffer
	if err := WriteTable(&tab, rs...); err != nil {
		t.Fatal(err)
	}
	rows := strings.Split(strings.TrimSpace(tab.String()), "\n")
	if len(rows) != 3 || !strings.Contains(rows[1], "0.500x") || !strings.Contains(rows[1], "20.0") {
		t.Fatalf("table lacks the floor or ratio beside the row:\n%s", tab.String())
	}
}

func TestRunCountsOps(t *testing.T) {
	var calls atomic.Int64
	var mu sync.Mutex
	seen := map[int]bool{}
	res, err := Run(context.Background(), "count", Options{WarmupCount: 5, Count: 50, Concurrency: 4},
		func(ctx context.Context, i int) (int, error) {
			calls.Add(1)
			mu.Lock()
			defer mu.Unlock()
			if seen[i] {
				t.Errorf("index %d given twice", i)
			}
			seen[i] = true
			return 3, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	if res.Ops != 50 || len(res.Latencies) != 50 || res.Msgs != 150 {
		t.Fatalf("ops %d latencies %d msgs %d, want 50/50/150", res.Ops, len(res.Latencies), res.Msgs)
	}
	if calls.Load() != 55 {
		t.Fatalf("%d calls, want 5 warm-up + 50 measured", calls.Load())
	}
	if res.Elapsed <= 0 || res.Bench != "count" || res.RSSMB <= 0 {
		t.Fatalf("result %+v", res)
	}
}

func TestRunForDuration(t *testing.T) {
	res, err := Run(context.Background(), "dur", Options{Duration: 50 * time.Millisecond, Concurrency: 2},
		func(ctx context.Context, i int) (int, error) {
			select {
			case <-time.After(time.Millisecond):
				return 0, nil
			case <-ctx.Done():
				return 0, ctx.Err()
			}
		})
	if err != nil {
		t.Fatalf("a duration run that ends on time is not an error: %v", err)
	}
	if res.Ops == 0 || res.Msgs != 0 {
		t.Fatalf("ops %d msgs %d", res.Ops, res.Msgs)
	}
}

func TestRunHonoursCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var calls atomic.Int64
	done := make(chan struct{})
	var res Result
	var err error
	go func() {
		defer close(done)
		res, err = Run(ctx, "cancel", Options{Count: 1 << 30, Concurrency: 2}, func(ctx context.Context, i int) (int, error) {
			if calls.Add(1) == 100 {
				cancel()
			}
			return 0, nil
		})
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not stop after cancel")
	}
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if res.Ops < 100 || res.Ops >= 1<<30 {
		t.Fatalf("ops %d: want the operations done before the cancel", res.Ops)
	}
}

func TestRunStopsAtFirstError(t *testing.T) {
	boom := errors.New("boom")
	res, err := Run(context.Background(), "fail", Options{Count: 100}, func(ctx context.Context, i int) (int, error) {
		if i == 10 {
			return 0, boom
		}
		return 1, nil
	})
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
	if res.Ops != 10 {
		t.Fatalf("ops %d, want the 10 before the failure", res.Ops)
	}
	if _, err := Run(context.Background(), "none", Options{}, nil); !errors.Is(err, ErrNoWork) {
		t.Fatalf("no count or duration: %v", err)
	}
}

func TestProgress(t *testing.T) {
	t.Run("nil writer writes nothing and does not panic", func(t *testing.T) {
		p := NewProgress(nil, "x", 10)
		p.Add(5)
		p.Done()
		res, err := Run(context.Background(), "quiet", Options{Count: 5}, func(context.Context, int) (int, error) { return 0, nil })
		if err != nil || res.Ops != 5 {
			t.Fatal(res, err)
		}
	})
	t.Run("redraws are rate limited", func(t *testing.T) {
		var buf bytes.Buffer
		now := time.Unix(0, 0)
		p := NewProgress(&buf, "load", 1000)
		p.now = func() time.Time { return now }
		p.start = now
		for range 1000 {
			p.Add(1)
		}
		if n := strings.Count(buf.String(), "\r"); n != 1 {
			t.Fatalf("%d redraws within one interval, want 1", n)
		}
		now = now.Add(DefaultProgressInterval)
		p.Add(0)
		p.Done()
		out := buf.String()
		if n := strings.Count(out, "\r"); n != 3 {
			t.Fatalf("%d redraws, want 3: %q", n, out)
		}
		if !strings.HasSuffix(out, "1000/1000 5000/s\n") || !strings.Contains(out, "100%") {
			t.Fatalf("final line %q", out)
		}
	})
	t.Run("run draws to the given writer", func(t *testing.T) {
		var buf bytes.Buffer
		if _, err := Run(context.Background(), "drawn", Options{Count: 3, Progress: &buf}, func(context.Context, int) (int, error) { return 0, nil }); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(buf.String(), "\rdrawn [") || !strings.HasSuffix(buf.String(), "\n") {
			t.Fatalf("progress output %q", buf.String())
		}
	})
}
