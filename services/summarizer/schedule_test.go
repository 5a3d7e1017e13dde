package summarizer

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
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
	"github.com/membus/membus/pkg/vector"
)

// cet is the schedule's time zone in these tests (not UTC, so bucket edges are local).
var cet = time.FixedZone("CET", 3600)

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) Set(t time.Time) { c.mu.Lock(); c.t = t; c.mu.Unlock() }

// world is what summarizer replicas share: SQL, locks (Redis in production), the index.
type world struct {
	t      *testing.T
	ctx    context.Context
	clock  *fakeClock
	st     *store.Store
	locker *lock.Local
	vec    *vector.Local
	emb    embed.Embedder
	built  atomic.Int32
	n      int
}

func newWorld(t *testing.T, start time.Time) *world {
	t.Helper()
	w := &world{t: t, ctx: context.Background(), clock: &fakeClock{t: start}, locker: lock.NewLocal(), emb: embed.NewHash()}
	st, err := store.OpenSQLite(w.ctx, filepath.Join(t.TempDir(), "membus.db"), store.WithClock(w.clock.Now))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	w.st = st
	w.vec, err = vector.OpenLocal(t.TempDir(), w.emb.Model(), embed.HashDim)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.vec.Close() })
	return w
}

// replica is one summarizer process's scheduler.
func (w *world) replica(name string) *Scheduler {
	w.t.Helper()
	cfg := Defaults()
	cfg.Location = cet
	names, _ := bus.NewNames("")
	sc, err := NewScheduler(cfg, Deps{Names: names, Store: w.st, Locker: w.locker, Metrics: metrics.New("summarizer", name),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Now: w.clock.Now, Embedder: w.emb, Vectors: w.vec})
	if err != nil {
		w.t.Fatal(err)
	}
	sc.afterSave = func(string) { w.built.Add(1) }
	return sc
}

// remember stores a memory created at `at` (user scope, or agent scope when agent is set).
func (w *world) remember(user, agent, text string, at time.Time) store.Memory {
	w.t.Helper()
	w.n++
	scope := contract.ScopeUser
	if agent != "" {
		scope = contract.ScopeAgent
	}
	c := memory.Candidate{Scope: scope, Category: memory.Fact, Subject: user, Polarity: 1, Value: text, Text: text}
	vecs, _ := w.emb.Embed(w.ctx, []string{text})
	m := store.Memory{ID: memory.ID(acct, user, agent, c), AccountID: acct, UserID: user, AgentID: agent, Scope: scope, Category: memory.Fact,
		Subject: user, Polarity: 1, Value: text, Abstract: text, Text: text, Importance: 0.5, ValidFrom: at, ContentHash: memory.ContentHash(text),
		Embedding: vecs[0], EmbedModel: w.emb.Model(), CreatedAt: at, UpdatedAt: at,
		Sources: []store.Source{{SessionID: "s1", MessageID: fmt.Sprintf("m-%d", w.n)}}}
	src := fmt.Sprintf(`[{"session_id":"s1","message_id":"m-%d"}]`, w.n)
	if _, err := w.st.DB().ExecContext(w.ctx, `INSERT INTO memories (id, account_id, user_id, agent_id, scope, category, subject, attribute, polarity,
		value, abstract, text, importance, sources, valid_from_us, content_hash, embedding, embed_model, created_us, updated_us)
		VALUES (?, ?, ?, ?, ?, ?, ?, '', 1, ?, ?, ?, 0.5, ?, ?, ?, ?, ?, ?, ?)`,
		m.ID, acct, user, agent, scope, memory.Fact, user, text, text, text, src, at.UnixMicro(), m.ContentHash,
		store.EncodeVector(m.Embedding), m.EmbedModel, at.UnixMicro(), at.UnixMicro()); err != nil {
		w.t.Fatal(err)
	}
	if err := w.vec.Upsert(w.ctx, w.emb.Model(), []vector.Point{{ID: m.ID, AccountID: acct, UserID: user, AgentID: agent, Scope: scope,
		Kind: contract.KindMemory, Category: memory.Fact, Text: text, Vector: m.Embedding, CreatedAt: at}}); err != nil {
		w.t.Fatal(err)
	}
	return m
}

// tickAll ticks every replica at once.
func (w *world) tickAll(reps ...*Scheduler) {
	var wg sync.WaitGroup
	for _, r := range reps {
		wg.Add(1)
		go func() { defer wg.Done(); r.Tick(w.ctx) }()
	}
	wg.Wait()
}

func (w *world) count(q string, args ...any) int {
	w.t.Helper()
	var n int
	if err := w.st.DB().QueryRowContext(w.ctx, q, args...).Scan(&n); err != nil {
		w.t.Fatal(err)
	}
	return n
}

func (w *world) digests() map[string]bool {
	w.t.Helper()
	rows, err := w.st.DB().QueryContext(w.ctx, "SELECT user_id, agent_id, period, bucket FROM summaries")
	if err != nil {
		w.t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]bool{}
	for rows.Next() {
		var u, a, p, b string
		if err := rows.Scan(&u, &a, &p, &b); err != nil {
			w.t.Fatal(err)
		}
		out[u+"/"+a+"/"+p+"/"+b] = true
	}
	return out
}

func local(y int, m time.Month, d, h, min int) time.Time {
	return time.Date(y, m, d, h, min, 0, 0, cet)
}

func TestBucketsAndDueTimes(t *testing.T) {
	cases := []struct {
		name, period string
		at           time.Time
		bucket       string
		due          time.Time // at the default time of the job
	}{
		{"a day is due at 02:00 the next day", PeriodDay, local(2026, 11, 30, 23, 59), "2026-11-30", local(2026, 12, 1, 2, 0)},
		{"local midnight starts the next day", PeriodDay, local(2026, 12, 1, 0, 0), "2026-12-01", local(2026, 12, 2, 2, 0)},
		{"ISO week from Monday; due Monday 03:00", PeriodWeek, local(2026, 12, 6, 12, 0), "2026-W49", local(2026, 12, 7, 3, 0)},
		{"a week spanning new year has its ISO year", PeriodWeek, local(2027, 1, 1, 12, 0), "2026-W53", local(2027, 1, 4, 3, 0)},
		{"a month is due on the 1st at 04:00", PeriodMonth, local(2026, 11, 30, 12, 0), "2026-11", local(2026, 12, 1, 4, 0)},
	}
	at := map[string]string{PeriodDay: "02:00", PeriodWeek: "03:00", PeriodMonth: "04:00"}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := BucketOf(tc.period, tc.at, cet)
			if err != nil {
				t.Fatal(err)
			}
			off, _ := parseClock(at[tc.period])
			if s.Bucket != tc.bucket || !dueAt(s, off).Equal(tc.due) {
				t.Errorf("bucket %s due %v, want %s due %v", s.Bucket, dueAt(s, off), tc.bucket, tc.due)
			}
		})
	}
	if _, err := BucketOf("year", time.Now(), cet); err == nil {
		t.Error("period year accepted")
	}
}

// Two replicas tick together every half hour from Sunday noon to Wednesday morning, crossing
// midnights, the week boundary (Monday 2026-11-30) and the month boundary (December 1st).
func TestTwoReplicasBuildEachDigestOnce(t *testing.T) {
	w := newWorld(t, local(2026, 11, 29, 12, 0))
	w.remember("alice", "", "Alice planned the billing migration to Postgres.", local(2026, 11, 29, 10, 0))
	w.remember("alice", "", "Alice decided to batch the invoices import.", local(2026, 11, 30, 10, 0))
	w.remember("alice", "main", "The agent fixed the import timeout by batching rows.", local(2026, 11, 30, 11, 0))
	w.remember("alice", "", "Alice started the online migration of the invoices table.", local(2026, 12, 1, 10, 0))
	a, b := w.replica("a"), w.replica("b")
	for now := w.clock.Now(); !now.After(local(2026, 12, 2, 6, 0)); now = now.Add(30 * time.Minute) {
		w.clock.Set(now)
		w.tickAll(a, b)
	}
	want := map[string]bool{
		"alice//day/2026-11-29": true, "alice//day/2026-11-30": true, "alice/main/day/2026-11-30": true, "alice//day/2026-12-01": true,
		"alice//week/2026-W48": true,
		"alice//month/2026-11": true, "alice/main/month/2026-11": true,
	}
	got := w.digests()
	if len(got) != len(want) {
		t.Errorf("digests %v, want %v", got, want)
	}
	for k := range want {
		if !got[k] {
			t.Errorf("digest %s missing", k)
		}
	}
	if n := w.built.Load(); int(n) != len(want) {
		t.Errorf("%d digest builds across both replicas, want %d (each once)", n, len(want))
	}
	if n := w.count("SELECT COUNT(*) FROM outbox WHERE CAST(payload AS TEXT) LIKE '%\"bucket\"%'"); n != len(want) {
		t.Errorf("%d summary_created events, want %d", n, len(want))
	}
	if n := w.count("SELECT COUNT(*) FROM memories WHERE category = 'digest' AND sources = '[]'"); n != len(want) {
		t.Errorf("%d digest memories, want %d", n, len(want))
	}
	id := memory.DigestID(acct, "alice", "main", PeriodDay, "2026-11-30")
	p, err := w.vec.Get(w.ctx, acct, "alice", id)
	if err != nil || p.Kind != contract.KindDigest || p.Scope != contract.ScopeAgent || p.AgentID != "main" {
		t.Errorf("agent digest point: %+v %v", p, err)
	}
	for job, bucket := range map[string]string{JobDaily: "2026-12-01", JobWeekly: "2026-W48", JobMonthly: "2026-11", JobDedup: "2026-12-01"} {
		if st, err := w.st.Job(w.ctx, job); err != nil || st.Bucket != bucket {
			t.Errorf("job %s at %q (%v), want %s", job, st.Bucket, err, bucket)
		}
	}
	// The summary RPC reads them by any date of the bucket.
	svc := &Service{cfg: a.cfg, d: Deps{Store: w.st}}
	res, err := svc.Summary(w.ctx, acct, contract.SummaryRequest{V: 1, UserID: "alice", Period: PeriodWeek, Date: "2026-11-26"})
	if err != nil || res.Bucket != "2026-W48" || res.Text == "" {
		t.Errorf("summary week of 2026-11-26: %+v %v", res, err)
	}
	if _, err := svc.Summary(w.ctx, acct, contract.SummaryRequest{V: 1, UserID: "bob", Period: PeriodDay, Date: "2026-11-30"}); err == nil {
		t.Error("another user's digest was answered")
	}
	if _, err := svc.Summary(w.ctx, acct, contract.SummaryRequest{V: 1, UserID: "alice", Period: PeriodDay, Date: "30.11.2026"}); err == nil {
		t.Error("a bad date was accepted")
	}
}

// A replica dies after storing the first of two digests of a bucket; the restarted one builds
// only the other, and nothing is stored or announced twice.
func TestRestartMidRunDoesNotDuplicate(t *testing.T) {
	w := newWorld(t, local(2026, 11, 30, 12, 0))
	w.remember("alice", "", "Alice planned the billing migration.", local(2026, 11, 30, 10, 0))
	w.remember("bob", "", "Bob reviewed the invoices schema.", local(2026, 11, 30, 10, 0))
	w.clock.Set(local(2026, 12, 1, 2, 0))
	ctx, crash := context.WithCancel(w.ctx)
	dying := w.replica("a")
	dying.afterSave = func(string) { w.built.Add(1); crash() }
	dying.Tick(ctx)
	if n := w.built.Load(); n != 1 {
		t.Fatalf("the dying replica built %d digests, want 1", n)
	}
	if st, _ := w.st.Job(w.ctx, JobDaily); st.Bucket == "2026-11-30" {
		t.Fatal("a crashed run was recorded as completed")
	}
	restarted := w.replica("a2")
	restarted.Tick(w.ctx)
	restarted.Tick(w.ctx)
	if n := w.built.Load(); n != 2 {
		t.Errorf("%d builds in all, want 2 (the restart builds only the missing one)", n)
	}
	if n := w.count("SELECT COUNT(*) FROM summaries WHERE period = 'day'"); n != 2 {
		t.Errorf("%d day digests, want 2", n)
	}
	if n := w.count("SELECT COUNT(*) FROM outbox WHERE CAST(payload AS TEXT) LIKE '%\"period\":\"day\"%'"); n != 2 {
		t.Errorf("%d day summary_created events, want 2", n)
	}
	if st, _ := w.st.Job(w.ctx, JobDaily); st.Bucket != "2026-11-30" {
		t.Errorf("daily job at %q, want 2026-11-30", st.Bucket)
	}
}

// Down from Wednesday 01:00 to Saturday noon: the three missed days are built on the first tick.
func TestThreeDayGapIsCaughtUp(t *testing.T) {
	w := newWorld(t, local(2026, 12, 2, 0, 30))
	sc := w.replica("a")
	sc.Tick(w.ctx)
	for d, text := range map[int]string{2: "Alice shipped the billing release.", 3: "Alice met Dana about the replica.", 4: "Alice booked flights to Lisbon."} {
		w.remember("alice", "", text, local(2026, 12, d, 10, 0))
	}
	w.clock.Set(local(2026, 12, 5, 12, 0))
	restarted := w.replica("a")
	restarted.Tick(w.ctx)
	got := w.digests()
	for _, b := range []string{"2026-12-02", "2026-12-03", "2026-12-04"} {
		if !got["alice//day/"+b] {
			t.Errorf("missed day %s not caught up: %v", b, got)
		}
	}
	if st, _ := w.st.Job(w.ctx, JobDaily); st.Bucket != "2026-12-04" {
		t.Errorf("daily job at %q, want 2026-12-04", st.Bucket)
	}
	before := w.built.Load()
	restarted.Tick(w.ctx)
	if w.built.Load() != before {
		t.Error("a second tick rebuilt completed buckets")
	}
}

// The scheduler's loop ticks on start and on every timer tick (a fake timer here).
func TestRunTicksOnTheTimer(t *testing.T) {
	w := newWorld(t, local(2026, 11, 30, 12, 0))
	w.remember("alice", "", "Alice planned the billing migration.", local(2026, 11, 30, 10, 0))
	sc := w.replica("a")
	fire := make(chan time.Time)
	waiting := make(chan struct{}, 8)
	sc.after = func(time.Duration) <-chan time.Time { waiting <- struct{}{}; return fire }
	ctx, cancel := context.WithCancel(w.ctx)
	done := make(chan struct{})
	go func() { defer close(done); sc.Run(ctx) }()
	<-waiting // the first tick ran: nothing due yet
	if n := w.built.Load(); n != 0 {
		t.Fatalf("built %d before the day ended", n)
	}
	w.clock.Set(local(2026, 12, 1, 2, 5))
	fire <- time.Time{}
	<-waiting
	cancel()
	<-done
	if n := w.built.Load(); n != 1 {
		t.Errorf("built %d after the timer fired past 02:00, want 1", n)
	}
}
