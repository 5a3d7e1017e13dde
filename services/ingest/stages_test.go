package ingest_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/membus/membus/pkg/metrics"
	"github.com/membus/membus/pkg/session"
	"github.com/membus/membus/pkg/store"
	"github.com/membus/membus/pkg/testenv"
	"github.com/membus/membus/services/ingest"
)

// TestStageTimesAddUpToTheHandler: every batch records the stages it went through, on each SQL
// backend with and without the Redis cache in front, and the stages inside the handler add up
// to about its time: all of it but the bookkeeping between them, never more.
func TestStageTimesAddUpToTheHandler(t *testing.T) {
	sqlStages := []string{ingest.StageDecode, ingest.StageRedact, store.StageSQLBegin, store.StageSQLSessions,
		store.StageSQLMessages, store.StageOutbox, store.StageSQLCommit}
	redisStages := []string{session.StageRedisCache, session.StageRedisDedup}
	for _, cached := range []bool{false, true} {
		name := "SQL only"
		if cached {
			name = "Redis cache in front"
		}
		t.Run(name, func(t *testing.T) {
			forEachBackend(t, func(t *testing.T, st *store.Store) {
				h := newHarness(t, st)
				want, absent := sqlStages, redisStages
				if cached {
					rdb, prefix := testenv.Redis(t)
					h.sessions = session.NewCached(st, rdb, prefix, nil, nil)
					want, absent = append(append([]string(nil), sqlStages...), redisStages...), nil
				}
				cfg := ingest.Defaults()
				cfg.Batch = 8 // several batches from few events
				h.start(cfg)
				for i := range 40 {
					s := fmt.Sprintf("s-%d", i%4)
					ev := event(s, fmt.Sprintf("%s-e%d", s, i),
						msg(fmt.Sprintf("m%d-0", i), 0, "user", "My password=hunter22 is not for storing.", baseTime),
						msg(fmt.Sprintf("m%d-1", i), 1, "assistant", "Noted, without it.", baseTime))
					h.publish(ev, deliveryID(ev, 0))
				}
				h.settled(30 * time.Second)

				// The ack is recorded after the handler returned: wait for the last one.
				fams, err := h.m.Families()
				if err != nil {
					t.Fatal(err)
				}
				stage := func(name string) (float64, uint64, bool) {
					return metrics.HistogramSum(fams, metrics.Prefix+ingest.StageMetric, map[string]string{"stage": name})
				}
				testenv.Eventually(t, 10*time.Second, 20*time.Millisecond, func() error {
					var err error
					if fams, err = h.m.Families(); err != nil {
						return err
					}
					_, batches, _ := metrics.HistogramSum(fams, metrics.Prefix+ingest.HandlerMetric, nil)
					if _, acks, _ := stage(ingest.StageAck); batches == 0 || acks != batches {
						return fmt.Errorf("%d batches handled, %d acked", batches, acks)
					}
					return nil
				})
				handler, batches, _ := metrics.HistogramSum(fams, metrics.Prefix+ingest.HandlerMetric, nil)
				inside := 0.0
				for _, name := range ingest.Stages() {
					sum, n, ok := stage(name)
					if name != ingest.StageAck {
						inside += sum
					}
					if slices.Contains(want, name) && n != batches {
						t.Errorf("stage %s timed in %d of %d batches", name, n, batches)
					}
					if slices.Contains(absent, name) && ok {
						t.Errorf("stage %s recorded without Redis", name)
					}
				}
				if handler <= 0 {
					t.Fatalf("handler time %v", handler)
				}
				// The stages are disjoint intervals inside the handler's, so they can never
				// exceed it (a little slack for the float sums); what they miss is the loop and
				// counter bookkeeping between them — a few percent on a quiet machine — and the
				// scheduler's delays on a busy one (21 % in the bench's breakdown under go test
				// -p 4 at load 8). The lower bound checks that the stages cover most of the
				// handler, not how busy the machine is.
				t.Logf("%d batches: stages inside the handler %.4fs of %.4fs (%.1f%%)", batches, inside, handler, 100*inside/handler)
				if share := inside / handler; share > 1.001 || share < 0.5 {
					t.Errorf("stages inside the handler sum to %.4fs of %.4fs handler time (%.1f%%), want 50–100%%", inside, handler, 100*share)
				}
			})
		})
	}
}
