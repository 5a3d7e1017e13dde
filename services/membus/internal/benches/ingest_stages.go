package benches

import (
	"context"
	"fmt"
	"io"
	"net/http/httptest"
	"text/tabwriter"
	"time"

	"github.com/membus/membus/pkg/metrics"
	"github.com/membus/membus/services/ingest"
	"github.com/membus/membus/services/membus/internal/app"
)

// stageSample is what ingest's metrics say at one moment, summed over the run so far: the
// turn events acked, the batches handled and acked, and the seconds of the handler and of each
// stage (ingest.Stages).
type stageSample struct {
	acked            float64
	batches, ackRuns uint64
	handler          float64
	stages           map[string]float64
}

// readStages reads ingest's stage metrics from the process's /metrics, as a scrape would.
func readStages(env *app.Env) (stageSample, error) {
	rec := httptest.NewRecorder()
	env.MetricsHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	fams, err := metrics.ParseExposition(rec.Body)
	if err != nil {
		return stageSample{}, err
	}
	s := stageSample{stages: map[string]float64{}}
	s.acked, _ = metrics.Value(fams, metrics.Prefix+"ingest_outcomes_total", map[string]string{"outcome": "ack"})
	s.handler, s.batches, _ = metrics.HistogramSum(fams, metrics.Prefix+ingest.HandlerMetric, nil)
	for _, st := range ingest.Stages() {
		sum, n, _ := metrics.HistogramSum(fams, metrics.Prefix+ingest.StageMetric, map[string]string{"stage": st})
		s.stages[st] = sum
		if st == ingest.StageAck {
			s.ackRuns = n
		}
	}
	return s, nil
}

// settledStages waits until ingest has acked events turn events and recorded the ack of every
// batch it handled, then returns that sample: the messages that landed in SQL may still be on
// their way through Redis and the ack when the bench sees them.
func settledStages(ctx context.Context, read func() (stageSample, error), events int) (stageSample, error) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		s, err := read()
		if err != nil {
			return s, err
		}
		if s.acked >= float64(events) && s.ackRuns == s.batches {
			return s, nil
		}
		if time.Now().After(deadline) {
			return s, fmt.Errorf("stage metrics: %v of %d events acked, %d of %d batches' acks recorded after 30 s", s.acked, events, s.ackRuns, s.batches)
		}
		select {
		case <-ctx.Done():
			return s, ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// stageBreakdown is where ingest's time went between two samples.
type stageBreakdown struct {
	handler float64            // seconds in the batch handler, summed over the workers
	stages  map[string]float64 // seconds per stage
	msgs    int                // chat messages stored in between
	batches uint64             // fetched batches handled in between
	wall    time.Duration      // the phase's wall time
}

func newStageBreakdown(before, after stageSample, msgs int, wall time.Duration) stageBreakdown {
	b := stageBreakdown{handler: after.handler - before.handler, stages: map[string]float64{}, msgs: msgs, batches: after.batches - before.batches, wall: wall}
	for st, v := range after.stages {
		b.stages[st] = v - before.stages[st]
	}
	return b
}

// other is the handler time no stage accounts for: the bookkeeping between them.
func (b stageBreakdown) other() float64 {
	o := b.handler
	for _, st := range ingest.Stages() {
		if st != ingest.StageAck {
			o -= b.stages[st]
		}
	}
	return o
}

// write prints the breakdown as a table: the stages inside the handler in pipeline order, the
// rest of the handler's time, the handler, then the runner's ack after it; each with its
// seconds, its share of the handler's time and its µs per stored message.
func (b stageBreakdown) write(w io.Writer, title string) error {
	perBatch := 0.0
	if b.batches > 0 {
		perBatch = float64(b.msgs) / float64(b.batches)
	}
	fmt.Fprintf(w, "%s: where ingest's time went (seconds summed over ingest's workers in a %.2f s phase, %d batches of %.0f messages on average; µs per stored message)\n",
		title, b.wall.Seconds(), b.batches, perBatch)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "stage\tseconds\tof handler\tµs/msg\t")
	row := func(name string, secs float64) {
		share, per := 0.0, 0.0
		if b.handler > 0 {
			share = 100 * secs / b.handler
		}
		if b.msgs > 0 {
			per = 1e6 * secs / float64(b.msgs)
		}
		fmt.Fprintf(tw, "%s\t%.4f\t%.1f%%\t%.1f\t\n", name, secs, share, per)
	}
	for _, st := range ingest.Stages() {
		if st != ingest.StageAck {
			row(st, b.stages[st])
		}
	}
	row("other", b.other())
	row("handler", b.handler)
	row("ack (after the handler)", b.stages[ingest.StageAck])
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write stage breakdown: %w", err)
	}
	return nil
}
