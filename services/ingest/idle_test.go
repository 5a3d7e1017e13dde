package ingest_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/membus/membus/pkg/contract"
	"github.com/membus/membus/pkg/store"
	"github.com/membus/membus/pkg/testenv"
	"github.com/membus/membus/services/ingest"
)

// A short chat (far below the token threshold) that simply stops is committed whole once it
// has been idle for IdleCommit, exactly once however many replicas sweep, and a session that
// keeps talking is not.
func TestIdleCommit(t *testing.T) {
	forEachBackend(t, func(t *testing.T, st *store.Store) {
		h := newHarness(t, st)
		cfg := ingest.Defaults()
		cfg.IdleCommit = time.Second
		h.start(cfg)
		h.start(cfg) // a second replica sweeps too

		for i := 1; i <= 2; i++ {
			h.publish(event("s-short", fmt.Sprintf("short-e%d", i),
				msg(fmt.Sprintf("u%d", i), 0, "user", "I live in Lisbon.", baseTime.Add(time.Duration(i)*time.Second)),
				msg(fmt.Sprintf("a%d", i), 1, "assistant", "Noted.", baseTime.Add(time.Duration(i)*time.Second))), fmt.Sprint("short-", i))
		}
		h.settled(30 * time.Second)

		// s-busy gets a turn every 100 ms, well inside the idle interval (the sleep is the
		// scenario: a user who keeps talking). The interval is 1 s, not less: with 400 ms a
		// machine loaded by other tests delayed ingest enough to make the busy session idle.
		stop := time.Now().Add(2500 * time.Millisecond)
		for i := 0; time.Now().Before(stop); i++ {
			h.publish(event("s-busy", fmt.Sprintf("busy-e%d", i), msg(fmt.Sprintf("b%d", i), 0, "user", "still here", baseTime.Add(time.Duration(i)*time.Second))), fmt.Sprint("busy-", i))
			time.Sleep(100 * time.Millisecond)
		}
		if got := commitRequests(t, st, "s-busy"); len(got) != 0 {
			t.Errorf("a session with a turn every 100 ms got %d idle commits", len(got))
		}

		var reqs []contract.CommitRequest
		exactlyOne := func() error {
			if reqs = commitRequests(t, st, "s-short"); len(reqs) != 1 {
				return fmt.Errorf("idle session: %d commit requests, want exactly 1: %+v", len(reqs), reqs)
			}
			return nil
		}
		testenv.Eventually(t, 10*time.Second, 50*time.Millisecond, exactlyOne)
		// More sweeps of both replicas (each sweeps every quarter of the idle interval): still one.
		testenv.Consistently(t, 2*time.Second, 100*time.Millisecond, exactlyOne)
		r := reqs[0]
		if r.Kind != contract.CommitIdle || r.Upto != 4 || r.KeepRecent == nil || *r.KeepRecent != 0 {
			t.Fatalf("idle request = %+v, want kind idle, upto 4 (every message), keep_recent 0", r)
		}
		if got := h.counter("ingest_idle_commit_requests_total"); got < 1 {
			t.Errorf("idle commit requests counted = %v, want ≥ 1", got)
		}
	})
}
