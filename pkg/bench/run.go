// Package bench is the harness every `membus bench <name>` uses: warm-up,
// a measured phase with per-operation latencies, percentiles, floors (the
// same workload against the bare dependency, to put a number in context),
// and output as docs/design.md §10 JSON Lines or a human table.
package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// ErrNoWork: Options set neither Count nor Duration.
var ErrNoWork = errors.New("bench: set Count or Duration")

// Options say how long to warm up and how much to measure.
type Options struct {
	Warmup      time.Duration // warm-up time, not measured (0 = none)
	WarmupCount int           // warm-up operations, not measured; with Warmup, whichever ends first
	Duration    time.Duration // measure for this long ...
	Count       int           // ... or exactly this many operations (takes precedence)
	Concurrency int           // parallel workers (default 1)
	Progress    io.Writer     // stderr progress bar; nil = none
}

// Result is one measured configuration.
type Result struct {
	Bench     string // ingest | recall | e2e | embed | ...
	Backend   string // embedded | real
	Sync      string // always | interval
	Embedder  string
	Size      int // the size parameter of the run (corpus size, batch size, ...)
	Ops       int
	Msgs      int
	Elapsed   time.Duration
	Latencies []time.Duration // one per measured operation, sorted ascending
	RSSMB     float64
	Floor     *Result // the same workload against the bare dependency
}

// Op is one operation. i numbers operations from 0 across warm-up and
// measurement (measured operations continue after the warm-up ones), so an
// op can derive unique ids from it. It returns how many messages the
// operation carried (0 when the bench does not count messages).
type Op func(ctx context.Context, i int) (msgs int, err error)

// Run warms up, then measures op with opt.Concurrency workers until
// opt.Count operations are done or opt.Duration has passed. The first
// operation error stops the run and is returned. When ctx is cancelled, Run
// stops promptly and returns what it measured with ctx's error.
func Run(ctx context.Context, name string, opt Options, op Op) (Result, error) {
	res := Result{Bench: name}
	if opt.Count <= 0 && opt.Duration <= 0 {
		return res, ErrNoWork
	}
	workers := max(opt.Concurrency, 1)

	next := atomic.Int64{}
	if opt.Warmup > 0 || opt.WarmupCount > 0 {
		_, _, err := runPhase(ctx, workers, opt.WarmupCount, opt.Warmup, &next, nil, op)
		if err != nil {
			return res, fmt.Errorf("bench %s warm-up: %w", name, err)
		}
	}

	var total int
	if opt.Count > 0 {
		total = opt.Count
	}
	label := name
	if opt.Count <= 0 {
		label = fmt.Sprintf("%s %s", name, opt.Duration)
	}
	prog := NewProgress(opt.Progress, label, total)
	start := time.Now()
	d := opt.Duration
	if opt.Count > 0 {
		d = 0
	}
	lats, msgs, err := runPhase(ctx, workers, opt.Count, d, &next, prog, op)
	res.Elapsed = time.Since(start)
	prog.Done()

	slices.Sort(lats)
	res.Latencies = lats
	res.Ops = len(lats)
	res.Msgs = msgs
	res.RSSMB = RSSMB()
	if err != nil {
		return res, fmt.Errorf("bench %s: %w", name, err)
	}
	return res, nil
}

// runPhase runs op until count operations are done (count > 0) or d has
// passed (d > 0), whichever comes first. It returns the latencies and message
// count of the successful operations.
func runPhase(parent context.Context, workers, count int, d time.Duration, next *atomic.Int64, prog *Progress, op Op) ([]time.Duration, int, error) {
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	if d > 0 {
		var cancelT context.CancelFunc
		ctx, cancelT = context.WithTimeout(ctx, d)
		defer cancelT()
	}
	first := next.Load()
	var (
		mu       sync.Mutex
		all      []time.Duration
		msgs     int
		firstErr error
		wg       sync.WaitGroup
	)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var lats []time.Duration
			var m int
			defer func() {
				mu.Lock()
				all = append(all, lats...)
				msgs += m
				mu.Unlock()
			}()
			for ctx.Err() == nil {
				i := next.Add(1) - 1
				if count > 0 && i-first >= int64(count) {
					return
				}
				t0 := time.Now()
				n, err := op(ctx, int(i))
				lat := time.Since(t0)
				if err != nil {
					if ctx.Err() != nil {
						return // cut short by the deadline or cancellation
					}
					mu.Lock()
					if firstErr == nil {
						firstErr = fmt.Errorf("op %d: %w", i, err)
					}
					mu.Unlock()
					cancel()
					return
				}
				lats = append(lats, lat)
				m += n
				prog.Add(1)
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return all, msgs, firstErr
	}
	// A duration phase ends by its own timeout; only the caller's
	// cancellation is an error.
	if err := parent.Err(); err != nil {
		return all, msgs, err
	}
	return all, msgs, nil
}
