package extract

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/membus/membus/pkg/bus"
	"github.com/membus/membus/pkg/contract"
	"github.com/membus/membus/pkg/embed"
	"github.com/membus/membus/pkg/lock"
	"github.com/membus/membus/pkg/memory"
	"github.com/membus/membus/pkg/metrics"
	"github.com/membus/membus/pkg/store"
	"github.com/membus/membus/pkg/testenv"
)

// replica builds another extract Service on the env's NATS, store and vectors (a second
// process of the same deployment) with its own locker, extractor and metrics.
func (e *env) replica(name string, locker lock.Locker, x memory.Extractor) (*Service, *metrics.Metrics) {
	e.t.Helper()
	cfg := Defaults()
	cfg.BusyRetry = 20 * time.Millisecond
	m := metrics.New("extract", name)
	svc, err := New(cfg, Deps{NC: e.nc, JS: e.js, Names: e.names, Store: e.st, Locker: locker, Extractor: x,
		Embedder: embed.NewHash(), Vectors: e.vec, Metrics: m, KickOutbox: e.relay.Kick})
	if err != nil {
		e.t.Fatal(err)
	}
	return svc, m
}

// publishCommit queues a commit request the way the outbox relay does.
func (e *env) publishCommit(req contract.CommitRequest) {
	e.t.Helper()
	data, _ := json.Marshal(req)
	if _, err := bus.Publish(e.ctx, e.js, e.names.Commits(acct, req.SessionID), req.RequestID, data, nil); err != nil {
		e.t.Fatal(err)
	}
}

// faultyExtractor fails its first calls after the archive was written: by panicking (a
// crashed handler) or by returning an error.
type faultyExtractor struct {
	memory.Extractor
	panics bool
	fail   atomic.Int32
	calls  atomic.Int32
}

var errKilled = errors.New("injected: handler killed between archive and memory writes")

func (f *faultyExtractor) Extract(ctx context.Context, msgs []memory.Message) ([]memory.Candidate, error) {
	f.calls.Add(1)
	if f.fail.Add(-1) >= 0 {
		if f.panics {
			panic(errKilled)
		}
		return nil, errKilled
	}
	return f.Extractor.Extract(ctx, msgs)
}

func TestCommitKilledBetweenArchiveAndMemoriesIsRedelivered(t *testing.T) {
	for _, panics := range []bool{true, false} {
		t.Run(fmt.Sprintf("panic=%v", panics), func(t *testing.T) {
			e := newEnv(t)
			x := &faultyExtractor{Extractor: memory.NewHeuristic(), panics: panics}
			x.fail.Store(1)
			svc, _ := e.replica("a", e.locker, x)
			e.say("alice", "s1", "I live in Boston.", "I have a dog named Max.", "I love green tea.")
			e.goRun(svc.Run)
			e.publishCommit(e.request("alice", "s1", contract.CommitSync, "r-kill"))
			e.waitCommitsDrained()

			if n := x.calls.Load(); n != 2 {
				t.Fatalf("extractor ran %d times, want 2 (the killed delivery and the redelivery)", n)
			}
			as := e.archives("s1")
			if len(as) != 1 || as[0].State != store.StateIndexed || as[0].FromSeq != 1 || as[0].ToSeq != 3 {
				t.Fatalf("archives %+v, want the one archive 1..3, indexed", as)
			}
			if n := len(e.outboxEvents(contract.EventArchiveCreated)); n != 1 {
				t.Fatalf("%d archive_created events, want 1", n)
			}
			if n := e.count("SELECT COUNT(*) FROM memories WHERE account_id = ?", acct); n != 3 {
				t.Fatalf("%d memory rows, want 3", n)
			}
			if n := e.count("SELECT COUNT(*) FROM memory_sources WHERE account_id = ?", acct); n != 3 {
				t.Fatalf("%d memory_sources rows, want 3", n)
			}
			for v, m := range e.memories("alice") {
				if len(m.Sources) != 1 || !e.inIndex("alice", m.ID) {
					t.Errorf("memory %q: sources %v, indexed %v; want one source and indexed", v, m.Sources, e.inIndex("alice", m.ID))
				}
			}
			evs := e.outboxEvents(contract.EventCommitCompleted)
			if len(evs) != 1 || evs[0].Status != contract.StatusCompleted || evs[0].RequestID != "r-kill" {
				t.Fatalf("commit_completed %+v, want one completed for r-kill", evs)
			}
		})
	}
}

// watchedLocker records how many leases of each key are held at once, and how often a
// key was refused because another holder had it.
type watchedLocker struct {
	lock.Locker
	mu      sync.Mutex
	held    map[string]int
	maxHeld map[string]int
	busy    map[string]int
	refused map[string]chan struct{} // closed at a key's first refusal (lock.ErrBusy)
}

func watch(l lock.Locker) *watchedLocker {
	return &watchedLocker{Locker: l, held: map[string]int{}, maxHeld: map[string]int{}, busy: map[string]int{},
		refused: map[string]chan struct{}{}}
}

type watchedLease struct {
	lock.Lease
	w    *watchedLocker
	key  string
	once sync.Once
}

func (w *watchedLocker) Acquire(ctx context.Context, key string, ttl time.Duration) (lock.Lease, error) {
	l, err := w.Locker.Acquire(ctx, key, ttl)
	w.mu.Lock()
	defer w.mu.Unlock()
	if errors.Is(err, lock.ErrBusy) {
		w.busy[key]++
		if w.busy[key] == 1 {
			close(w.refusal(key))
		}
	}
	if err != nil {
		return nil, err
	}
	w.held[key]++
	w.maxHeld[key] = max(w.maxHeld[key], w.held[key])
	return &watchedLease{Lease: l, w: w, key: key}, nil
}

func (l *watchedLease) Release(ctx context.Context) error {
	l.once.Do(func() {
		l.w.mu.Lock()
		l.w.held[l.key]--
		l.w.mu.Unlock()
	})
	return l.Lease.Release(ctx)
}

// refusal is closed once key has been refused; the caller holds w.mu.
func (w *watchedLocker) refusal(key string) chan struct{} {
	ch, ok := w.refused[key]
	if !ok {
		ch = make(chan struct{})
		w.refused[key] = ch
	}
	return ch
}

// refusedCh is closed once key has been refused.
func (w *watchedLocker) refusedCh(key string) <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.refusal(key)
}

func (w *watchedLocker) stats(key string) (maxHeld, busy int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.maxHeld[key], w.busy[key]
}

// overlapExtractor measures how many extractions run at once per session, and can hold an
// extraction until a condition is met (to force the contention a test is about).
type overlapExtractor struct {
	memory.Extractor
	mu      sync.Mutex
	active  map[string]int
	maxAct  map[string]int
	started map[string]chan struct{}
	hold    func(session string) // called inside the extraction, while it counts as active
}

func newOverlap() *overlapExtractor {
	return &overlapExtractor{Extractor: memory.NewHeuristic(), active: map[string]int{}, maxAct: map[string]int{}, started: map[string]chan struct{}{}}
}

func (o *overlapExtractor) startedCh(session string) chan struct{} {
	o.mu.Lock()
	defer o.mu.Unlock()
	ch, ok := o.started[session]
	if !ok {
		ch = make(chan struct{})
		o.started[session] = ch
	}
	return ch
}

func (o *overlapExtractor) Extract(ctx context.Context, msgs []memory.Message) ([]memory.Candidate, error) {
	session := ""
	if len(msgs) > 0 {
		session, _, _ = strings.Cut(msgs[0].ID, "-") // ids are <session>-mNN
	}
	ch := o.startedCh(session)
	o.mu.Lock()
	o.active[session]++
	o.maxAct[session] = max(o.maxAct[session], o.active[session])
	select {
	case <-ch:
	default:
		close(ch)
	}
	o.mu.Unlock()
	defer func() {
		o.mu.Lock()
		o.active[session]--
		o.mu.Unlock()
	}()
	if o.hold != nil {
		o.hold(session)
	}
	return o.Extractor.Extract(ctx, msgs)
}

func (o *overlapExtractor) max(session string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.maxAct[session]
}

// lockers are the shared lock services two replicas can use: the in-process one (embedded
// mode: replicas in one process) and Redis (a distributed deployment).
func lockers(t *testing.T) map[string]func(t *testing.T) lock.Locker {
	return map[string]func(t *testing.T) lock.Locker{
		"local": func(t *testing.T) lock.Locker { return lock.NewLocal() },
		"redis": func(t *testing.T) lock.Locker {
			c, prefix := testenv.Redis(t)
			return lock.NewRedis(c, prefix)
		},
	}
}

func TestTwoReplicasRunOneCommitPerSessionAtATime(t *testing.T) {
	for name, mk := range lockers(t) {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			shared := watch(mk(t))
			x := newOverlap()
			key := lock.SessionKey(acct, "s1")
			// The first extraction holds the session until the other replica has been refused
			// the lock at least once, so the test always sees the contention it is about.
			var first atomic.Bool
			x.hold = func(string) {
				if !first.CompareAndSwap(false, true) {
					return
				}
				// In a handler, not the test goroutine, so no testenv.Eventually: a bounded
				// wait on the refusal itself (the test reports a missing one below).
				select {
				case <-shared.refusedCh(key):
				case <-time.After(10 * time.Second):
				}
			}
			a, _ := e.replica("a", shared, x)
			b, _ := e.replica("b", shared, x)
			e.goRun(a.Run)
			e.goRun(b.Run)

			// Four commits of one session, each with new messages to archive.
			for i, text := range []string{"I have a dog named Max.", "I love green tea.", "I work at Stripe.", "I'm allergic to peanuts."} {
				e.say("alice", "s1", text)
				i++
				req := e.request("alice", "s1", contract.CommitCompact, fmt.Sprintf("r%d", i))
				e.publishCommit(req)
			}
			e.waitCommitsDrained()

			maxHeld, busy := shared.stats(key)
			if maxHeld != 1 {
				t.Fatalf("the session lock was held %d times at once, want 1", maxHeld)
			}
			if busy == 0 {
				t.Fatal("no replica was ever refused the session lock: the test saw no contention")
			}
			if n := x.max("s1"); n != 1 {
				t.Fatalf("%d extractions of one session ran at once, want 1", n)
			}
			// Every message archived exactly once, in non-overlapping ranges.
			var next int64 = 1
			for _, a := range e.archives("s1") {
				if a.FromSeq != next || a.State != store.StateIndexed {
					t.Fatalf("archive %d..%d (%s), want it to start at %d and be indexed", a.FromSeq, a.ToSeq, a.State, next)
				}
				next = a.ToSeq + 1
			}
			if next != 5 {
				t.Fatalf("archives end at %d, want all 4 messages archived", next-1)
			}
			if n := e.count("SELECT COUNT(*) FROM memories WHERE account_id = ?", acct); n != 4 {
				t.Fatalf("%d memories, want 4", n)
			}
			if n := len(e.outboxEvents(contract.EventCommitCompleted)); n != 4 {
				t.Fatalf("%d commit_completed events, want one per request", n)
			}
		})
	}
}

func TestSessionsOfOneUserCommitConcurrentlyAndDedup(t *testing.T) {
	for name, mk := range lockers(t) {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			shared := watch(mk(t))
			x := newOverlap()
			// Each session's extraction waits until the other session's has started: both
			// commits are inside their session locks at once, so only the merge lock orders
			// their conflict and dedup passes.
			x.hold = func(session string) {
				other := map[string]string{"s1": "s2", "s2": "s1"}[session]
				select {
				case <-x.startedCh(other):
				case <-time.After(10 * time.Second):
					t.Errorf("session %s never saw %s extract concurrently", session, other)
				}
			}
			a, _ := e.replica("a", shared, x)
			b, _ := e.replica("b", shared, x)
			e.goRun(a.Run)
			e.goRun(b.Run)

			for _, s := range []string{"s1", "s2"} {
				e.say("alice", s, "I have a dog named Max.", "I think my team ships the billing release every friday afternoon.")
			}
			e.publishCommit(e.request("alice", "s1", contract.CommitCompact, "r1"))
			e.publishCommit(e.request("alice", "s2", contract.CommitCompact, "r2"))
			e.waitCommitsDrained()

			if maxHeld, _ := shared.stats(lock.MergeKey(acct, "alice")); maxHeld != 1 {
				t.Fatalf("the merge lock was held %d times at once, want 1", maxHeld)
			}
			all, err := e.st.Memories(e.ctx, store.MemoryFilter{AccountID: acct, UserID: "alice"})
			if err != nil {
				t.Fatal(err)
			}
			if len(all) != 2 {
				t.Fatalf("%d memories, want 2 (the dog and the fact, each once): %+v", len(all), all)
			}
			for _, m := range all {
				sessions := map[string]bool{}
				for _, s := range m.Sources {
					sessions[s.SessionID] = true
				}
				if !m.Active() || len(sessions) != 2 {
					t.Errorf("memory %q: active %v, sources %v; want active with sources in both sessions", m.Value, m.Active(), m.Sources)
				}
			}
		})
	}
}
