package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/membus/membus/pkg/contract"
	"github.com/membus/membus/pkg/store"
	"github.com/membus/membus/pkg/testenv"
)

// clock is a settable test clock.
type clock struct{ ns atomic.Int64 }

func (c *clock) now() time.Time         { return time.Unix(0, c.ns.Load()) }
func (c *clock) set(t time.Time)        { c.ns.Store(t.UnixNano()) }
func (c *clock) add(d time.Duration)    { c.ns.Add(int64(d)) }
func newClock(t time.Time) *clock       { c := &clock{}; c.set(t); return c }
func commitsSubject(a, s string) string { return names.Commits(a, s) }

// idleRequest builds the idle commit as ingest does; sweepIdle decodes what the store wrote.
func idleRequest(sess *store.Session, upto int64) (store.OutboxEntry, error) {
	keep := 0
	req := contract.CommitRequest{V: contract.Version, RequestID: fmt.Sprintf("idle-%s-%s-%d", sess.AccountID, sess.SessionID, upto),
		AccountID: sess.AccountID, UserID: sess.UserID, AgentID: sess.AgentID, SessionID: sess.SessionID,
		Kind: contract.CommitIdle, Upto: upto, KeepRecent: &keep, CreatedAt: time.Now().UTC()}
	payload, err := json.Marshal(req)
	return store.OutboxEntry{ID: req.RequestID, Subject: commitsSubject(sess.AccountID, sess.SessionID), Payload: payload}, err
}

func sweepIdle(ctx context.Context, s *store.Store, before time.Time, limit int) ([]contract.CommitRequest, error) {
	entries, err := s.RequestIdleCommits(ctx, before, limit, idleRequest)
	var reqs []contract.CommitRequest
	for _, e := range entries {
		var r contract.CommitRequest
		if err := json.Unmarshal(e.Payload, &r); err != nil {
			return nil, err
		}
		reqs = append(reqs, r)
	}
	return reqs, err
}

// clockedBackends is backends with the store's clock under the test's control.
func clockedBackends(t *testing.T, fn func(t *testing.T, s *store.Store, c *clock)) {
	t0 := time.Date(2026, 3, 4, 10, 0, 0, 0, time.UTC)
	t.Run("sqlite", func(t *testing.T) {
		c := newClock(t0)
		s, err := store.OpenSQLite(context.Background(), filepath.Join(t.TempDir(), "m.db"), store.WithClock(c.now))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		fn(t, s, c)
	})
	t.Run("mysql", func(t *testing.T) {
		dsn := testenv.MySQLDSN(t)
		c := newClock(t0)
		s, err := store.OpenMySQL(context.Background(), dsn, store.WithClock(c.now))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		fn(t, s, c)
	})
}

func TestRequestIdleCommits(t *testing.T) {
	const idle = 30 * time.Minute
	clockedBackends(t, func(t *testing.T, s *store.Store, c *clock) {
		ctx := context.Background()
		apply := func(session, id string) {
			t.Helper()
			if _, err := s.ApplyTurns(ctx, nil, []store.Turn{turn("acme", session, "e-"+id, 1, msg(id, 0, "hello "+id, c.now()))}); err != nil {
				t.Fatal(err)
			}
		}
		sweep := func() []contract.CommitRequest {
			t.Helper()
			reqs, err := sweepIdle(ctx, s, c.now().Add(-idle), 100)
			if err != nil {
				t.Fatal(err)
			}
			return reqs
		}

		apply("short", "m1")
		apply("short", "m2")
		c.add(idle - time.Minute)
		if got := sweep(); len(got) != 0 {
			t.Fatalf("a session active a minute ago was committed: %+v", got)
		}
		apply("short", "m3") // a new turn restarts the idle clock
		c.add(idle - time.Second)
		if got := sweep(); len(got) != 0 {
			t.Fatalf("the idle clock did not restart with a new turn: %+v", got)
		}

		c.add(2 * time.Second)
		got := sweep()
		if len(got) != 1 {
			t.Fatalf("idle session: %d requests, want 1", len(got))
		}
		r := got[0]
		if r.Kind != contract.CommitIdle || r.Upto != 3 || r.KeepRecent == nil || *r.KeepRecent != 0 || r.UserID != "u1" {
			t.Fatalf("request = %+v, want kind idle, upto 3, keep_recent 0, user u1", r)
		}
		if err := r.Validate(); err != nil {
			t.Fatalf("the idle request does not validate: %v", err)
		}
		if pending, _ := s.OutboxPending(ctx); pending != 1 {
			t.Fatalf("outbox rows = %d, want the one commit request", pending)
		}
		c.add(idle)
		if again := sweep(); len(again) != 0 {
			t.Fatalf("an idle session was requested twice: %+v", again)
		}

		// A session that a sync commit archived whole needs no idle commit.
		apply("synced", "x1")
		if _, err := s.RequestCommit(ctx, commitsSubject, contract.CommitRequest{V: contract.Version, RequestID: "sync-1", AccountID: "acme",
			UserID: "u1", SessionID: "synced", Kind: contract.CommitSync, CreatedAt: c.now()}); err != nil {
			t.Fatal(err)
		}
		c.add(2 * idle)
		if got := sweep(); len(got) != 0 {
			t.Fatalf("a session committed whole by a sync commit was committed again when idle: %+v", got)
		}
	})
}

// Every replica sweeps at once: each idle session is requested exactly once among them.
func TestRequestIdleCommitsRacingReplicas(t *testing.T) {
	const idle = time.Minute
	clockedBackends(t, func(t *testing.T, s *store.Store, c *clock) {
		ctx := context.Background()
		const sessions = 20
		for i := range sessions {
			id := string(rune('a'+i)) + "-sess"
			if _, err := s.ApplyTurns(ctx, nil, []store.Turn{turn("acme", id, "e-"+id, uint64(i+1), msg("m-"+id, 0, "text", c.now()))}); err != nil {
				t.Fatal(err)
			}
		}
		c.add(2 * idle)
		var mu sync.Mutex
		seen := map[string]int{}
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				for range 3 {
					reqs, err := sweepIdle(ctx, s, c.now().Add(-idle), 7)
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					for _, r := range reqs {
						seen[r.SessionID]++
					}
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		for len(seen) < sessions { // the racing sweeps may leave some for a later tick
			reqs, err := sweepIdle(ctx, s, c.now().Add(-idle), 100)
			if err != nil {
				t.Fatal(err)
			}
			if len(reqs) == 0 {
				break
			}
			for _, r := range reqs {
				seen[r.SessionID]++
			}
		}
		if len(seen) != sessions {
			t.Fatalf("%d of %d idle sessions were requested", len(seen), sessions)
		}
		for id, n := range seen {
			if n != 1 {
				t.Errorf("session %s requested %d times, want once", id, n)
			}
		}
		if pending, _ := s.OutboxPending(ctx); pending != sessions {
			t.Fatalf("outbox rows = %d, want %d", pending, sessions)
		}
	})
}
