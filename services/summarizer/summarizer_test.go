package summarizer

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/membus/membus/pkg/bus"
	"github.com/membus/membus/pkg/contract"
	"github.com/membus/membus/pkg/lock"
	"github.com/membus/membus/pkg/memory"
	"github.com/membus/membus/pkg/metrics"
	"github.com/membus/membus/pkg/store"
	"github.com/membus/membus/pkg/testenv"
)

const acct = "acme"

type env struct {
	t      *testing.T
	ctx    context.Context
	names  bus.Names
	st     *store.Store
	locker *lock.Local
	svc    *Service
	n      int
	msgs   map[int64]memory.Message
}

func newEnv(t *testing.T) *env {
	t.Helper()
	ctx := context.Background()
	_, nc := testenv.NATS(t)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	names, err := bus.NewNames("")
	if err != nil {
		t.Fatal(err)
	}
	if err := bus.EnsureStreams(ctx, js, names, bus.StreamLimits{}); err != nil {
		t.Fatal(err)
	}
	st, err := store.OpenSQLite(ctx, filepath.Join(t.TempDir(), "membus.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	e := &env{t: t, ctx: ctx, names: names, st: st, locker: lock.NewLocal(), msgs: map[int64]memory.Message{}}
	svc, err := New(Defaults(), Deps{JS: js, Names: names, Store: st, Locker: e.locker, Metrics: metrics.New("summarizer", "test")})
	if err != nil {
		t.Fatal(err)
	}
	e.svc = svc
	return e
}

// say stores user/assistant messages alternately, the way ingest does.
func (e *env) say(texts ...string) {
	e.t.Helper()
	turn := store.Turn{AccountID: acct, UserID: "alice", AgentID: "main", SessionID: "s1", EventID: fmt.Sprintf("ev-%d", e.n)}
	for _, text := range texts {
		e.n++
		role := contract.RoleUser
		if e.n%2 == 0 {
			role = contract.RoleAssistant
		}
		m := store.Message{MessageID: fmt.Sprintf("m-%d", e.n), Role: role, Content: text, Parts: json.RawMessage(`[]`), Tokens: 10,
			CreatedAt: time.Date(2025, 1, 1, 0, 0, e.n, 0, time.UTC)}
		turn.Messages = append(turn.Messages, m)
		e.msgs[int64(e.n)] = memory.Message{ID: m.MessageID, Role: role, Text: text, CreatedAt: m.CreatedAt}
	}
	if _, err := e.st.ApplyTurns(e.ctx, nil, []store.Turn{turn}); err != nil {
		e.t.Fatal(err)
	}
}

// archive archives seqs from..to (state indexed, as extract leaves it) and returns the archive.
func (e *env) archive(from, to int64) store.Archive {
	e.t.Helper()
	epoch, err := e.st.AcquireEpoch(e.ctx, acct, "s1")
	if err != nil {
		e.t.Fatal(err)
	}
	a := store.Archive{ID: fmt.Sprintf("arch-%d-%d", from, to), AccountID: acct, SessionID: "s1", UserID: "alice", AgentID: "main",
		FromSeq: from, ToSeq: to, Kind: contract.CommitSync, State: store.StateArchived}
	if err := e.st.CreateArchive(e.ctx, epoch, a, nil); err != nil {
		e.t.Fatal(err)
	}
	if err := e.st.AdvanceArchive(e.ctx, epoch, a, store.StateArchived, store.StateExtracted, nil); err != nil {
		e.t.Fatal(err)
	}
	if err := e.st.AdvanceArchive(e.ctx, epoch, a, store.StateExtracted, store.StateIndexed, nil); err != nil {
		e.t.Fatal(err)
	}
	return a
}

// deliver hands the summarizer the archive_created event of a.
func (e *env) deliver(a store.Archive) error {
	ev := contract.Event{V: contract.Version, EventID: "evt-" + a.ID, Kind: contract.EventArchiveCreated, AccountID: acct, UserID: "alice",
		SessionID: "s1", ArchiveID: a.ID, FromSeq: a.FromSeq, ToSeq: a.ToSeq, At: time.Now()}
	b, _ := json.Marshal(ev)
	return e.svc.handle(e.ctx, &bus.Msg{Subject: e.names.Event(ev.Kind, acct, "s1"), Data: b, Account: acct, SessionToken: "s1"})
}

// expected folds the archives' messages in order, independently of the service.
func (e *env) expected(ranges ...[2]int64) string {
	o := Parse("")
	for _, r := range ranges {
		var in []memory.Message
		for s := r[0]; s <= r[1]; s++ {
			in = append(in, e.msgs[s])
		}
		o = Parse(o.Update(in).String())
	}
	return o.String()
}

func (e *env) session() *store.Session {
	e.t.Helper()
	s, err := e.st.GetSession(e.ctx, acct, "s1")
	if err != nil {
		e.t.Fatal(err)
	}
	return s
}

func (e *env) summaryEvents() int {
	e.t.Helper()
	var n int
	if err := e.st.DB().QueryRowContext(e.ctx, "SELECT COUNT(*) FROM outbox WHERE subject LIKE '%.events.summary_created.%'").Scan(&n); err != nil {
		e.t.Fatal(err)
	}
	return n
}

var firstArchive = []string{
	"I want to migrate the billing service to Postgres.",
	"Sure, we decided to keep the old schema for now.",
	"The config lives in deploy/billing.yaml and the owner is Dana.",
	"Noted, the config file is deploy/billing.yaml.",
}

var secondArchive = []string{
	"The import failed with a timeout error on the invoices table.",
	"We'll batch the invoices import in chunks of ten thousand rows.",
	"Is the nightly report affected by the new schema?",
	"No, the nightly report reads from the replica and keeps working.",
}

func TestApplyFoldsInOrderAndIsIdempotent(t *testing.T) {
	e := newEnv(t)
	e.say(firstArchive...)
	a1 := e.archive(1, 4)
	if err := e.deliver(a1); err != nil {
		t.Fatal(err)
	}
	if got, want := e.session().Overview, e.expected([2]int64{1, 4}); got != want {
		t.Fatalf("overview after the first archive:\n%s\nwant:\n%s", got, want)
	}
	e.say(secondArchive...)
	a2 := e.archive(5, 8)
	if err := e.deliver(a2); err != nil {
		t.Fatal(err)
	}
	sess := e.session()
	want := e.expected([2]int64{1, 4}, [2]int64{5, 8})
	if sess.Overview != want || sess.SummarizedUpto != 8 {
		t.Fatalf("after both archives: summarized_upto %d, overview:\n%s\nwant:\n%s", sess.SummarizedUpto, sess.Overview, want)
	}
	for _, w := range []string{"billing service", "deploy/billing.yaml", "timeout error", "batch the invoices"} {
		if !strings.Contains(sess.Overview, w) {
			t.Errorf("overview lost %q", w)
		}
	}
	as, err := e.st.Archives(e.ctx, acct, "s1")
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range as {
		if a.State != store.StateSummarized || a.Abstract == "" || a.Overview == "" {
			t.Errorf("archive %s: state %s abstract %q", a.ID, a.State, a.Abstract)
		}
	}
	events := e.summaryEvents()
	if events != 2 {
		t.Fatalf("%d summary_created events, want 2", events)
	}

	// Redelivery of either event changes nothing.
	for _, a := range []store.Archive{a2, a1, a2} {
		if err := e.deliver(a); err != nil {
			t.Fatal(err)
		}
	}
	again := e.session()
	if again.Overview != sess.Overview || again.SummarizedUpto != 8 || e.summaryEvents() != events {
		t.Fatalf("redelivery changed the overview or queued events:\n%s", again.Overview)
	}
}

func TestApplyReorderedEvents(t *testing.T) {
	e := newEnv(t)
	e.say(firstArchive...)
	a1 := e.archive(1, 4)
	e.say(secondArchive...)
	a2 := e.archive(5, 8)
	// The event of the second archive arrives first: both are applied, in seq order.
	if err := e.deliver(a2); err != nil {
		t.Fatal(err)
	}
	want := e.expected([2]int64{1, 4}, [2]int64{5, 8})
	if got := e.session(); got.Overview != want || got.SummarizedUpto != 8 {
		t.Fatalf("summarized_upto %d overview:\n%s\nwant:\n%s", got.SummarizedUpto, got.Overview, want)
	}
	if err := e.deliver(a1); err != nil {
		t.Fatal(err)
	}
	if got := e.session(); got.Overview != want {
		t.Fatalf("late event of the first archive changed the overview:\n%s", got.Overview)
	}
	// The reversed order would differ (the title comes from the first archive).
	if rev := e.expected([2]int64{5, 8}, [2]int64{1, 4}); rev == want {
		t.Fatal("test cannot tell the order apart")
	}
}

func TestOverviewAndAbstractCaps(t *testing.T) {
	e := newEnv(t)
	for i := 0; i < 6; i++ {
		var texts []string
		for j := 0; j < 20; j++ {
			texts = append(texts, fmt.Sprintf("We decided that component %d-%d keeps its own %s cache and config in svc/c%d_%d.yaml.", i, j, strings.Repeat("very ", 30), i, j))
		}
		e.say(texts...)
		a := e.archive(int64(i*20+1), int64(i*20+20))
		if err := e.deliver(a); err != nil {
			t.Fatal(err)
		}
	}
	sess := e.session()
	if n := len(sess.Overview); n > 4000 || n == 0 {
		t.Fatalf("overview %d chars, want 1..4000", n)
	}
	as, err := e.st.Archives(e.ctx, acct, "s1")
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range as {
		if n := len([]rune(a.Abstract)); n > 256 || n == 0 {
			t.Errorf("abstract of %s is %d chars, want 1..256", a.ID, n)
		}
		if len(a.Overview) > 4000 {
			t.Errorf("archive overview %d chars", len(a.Overview))
		}
	}
}

func TestHandleBusyTombstonedAndBad(t *testing.T) {
	e := newEnv(t)
	e.say(firstArchive...)
	a := e.archive(1, 4)

	lease, err := e.locker.Acquire(e.ctx, lock.SessionKey(acct, "s1"), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := bus.IsBusy(e.deliver(a)); !ok {
		t.Fatal("apply under a held session lock is not Busy")
	}
	lease.Release(e.ctx)
	if e.session().Overview != "" {
		t.Fatal("applied under a held lock")
	}

	if _, err := e.st.DB().ExecContext(e.ctx, "INSERT INTO tombstones (account_id, user_id, session_id, created_us) VALUES (?, ?, ?, ?)",
		acct, "alice", "s1", time.Now().UnixMicro()); err != nil {
		t.Fatal(err)
	}
	if err := e.deliver(a); err != nil {
		t.Fatalf("event of an erased session: %v, want dropped", err)
	}
	if e.session().Overview != "" {
		t.Fatal("an erased session got an overview")
	}

	bad := &bus.Msg{Subject: e.names.Event(contract.EventArchiveCreated, "globex", "s1"), Data: []byte(`{"v":1,"kind":"archive_created","account_id":"acme","session_id":"s1"}`), Account: "globex", SessionToken: "s1"}
	if err := e.svc.handle(e.ctx, bad); !bus.IsPermanent(err) {
		t.Fatalf("event whose account disagrees with its subject: %v, want permanent", err)
	}
	if err := e.svc.handle(e.ctx, &bus.Msg{Data: []byte(`{`), Account: acct}); !bus.IsPermanent(err) {
		t.Fatalf("undecodable event: %v, want permanent", err)
	}
}
