package extract

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/membus/membus/pkg/bus"
	"github.com/membus/membus/pkg/contract"
	"github.com/membus/membus/pkg/embed"
	"github.com/membus/membus/pkg/lock"
	"github.com/membus/membus/pkg/metrics"
	"github.com/membus/membus/pkg/store"
	"github.com/membus/membus/pkg/testenv"
	"github.com/membus/membus/pkg/vector"
)

const acct = "acme"

// flakyVectors is a vector.Store whose next failUpserts upserts fail (a crash between the
// memory rows and the vectors).
type flakyVectors struct {
	vector.Store
	mu          sync.Mutex
	failUpserts int
	upserts     int
}

var errInjected = errors.New("injected vector outage")

func (f *flakyVectors) Upsert(ctx context.Context, model string, pts []vector.Point) error {
	f.mu.Lock()
	if f.failUpserts > 0 {
		f.failUpserts--
		f.mu.Unlock()
		return errInjected
	}
	f.upserts++
	f.mu.Unlock()
	return f.Store.Upsert(ctx, model, pts)
}

type env struct {
	t      *testing.T
	ctx    context.Context
	nc     *nats.Conn
	js     jetstream.JetStream
	names  bus.Names
	st     *store.Store
	locker *lock.Local
	vec    *flakyVectors
	svc    *Service
	relay  *bus.Relay
	seq    map[string]int
}

func newEnv(t *testing.T) *env {
	t.Helper()
	return newEnvWith(t, embed.NewHash())
}

// newEnvWith is newEnv with another embedder (the local ONNX model in the one-fact table).
func newEnvWith(t *testing.T, emb embed.Embedder) *env {
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
	lv, err := vector.OpenLocal(t.TempDir(), emb.Model(), emb.Dim())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lv.Close() })
	e := &env{t: t, ctx: ctx, nc: nc, js: js, names: names, st: st, locker: lock.NewLocal(), vec: &flakyVectors{Store: lv}, seq: map[string]int{}}
	e.relay = bus.NewRelay(js, names, st.Outbox(), bus.RelayConfig{Interval: 20 * time.Millisecond})
	svc, err := New(Defaults(), Deps{
		NC: nc, JS: js, Names: names, Store: st, Locker: e.locker, Embedder: emb, Vectors: e.vec,
		Metrics: metrics.New("extract", "test"), KickOutbox: e.relay.Kick,
	})
	if err != nil {
		t.Fatal(err)
	}
	e.svc = svc
	return e
}

// goRun runs fn until the test ends and waits for it to return.
func (e *env) goRun(fn func(ctx context.Context) error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := fn(ctx); err != nil && ctx.Err() == nil {
			e.t.Errorf("run: %v", err)
		}
	}()
	e.t.Cleanup(func() {
		cancel()
		<-done
	})
}

// startRelay publishes the outbox while the test runs.
func (e *env) startRelay() { e.goRun(e.relay.Run) }

// startService runs the commit consumer and the commit RPC, and waits until the RPC answers.
func (e *env) startService() {
	e.t.Helper()
	e.goRun(e.svc.Run)
	testenv.Eventually(e.t, 10*time.Second, 10*time.Millisecond, func() error {
		// A request without request_id is refused by the handler itself: the endpoint is up.
		err := bus.Call(e.ctx, e.nc, e.names.RPC(acct, "commit"), contract.CommitRPCRequest{V: contract.Version}, nil)
		var ce *bus.RPCCallError
		if errors.As(err, &ce) && ce.Code == bus.CodeBadRequest {
			return nil
		}
		return fmt.Errorf("commit rpc not served: %w", err)
	})
}

// say stores user messages in a session the way ingest does.
func (e *env) say(user, session string, texts ...string) {
	e.t.Helper()
	e.sayAs(user, session, contract.RoleUser, texts...)
}

func (e *env) sayAs(user, session, role string, texts ...string) {
	e.t.Helper()
	turn := store.Turn{AccountID: acct, UserID: user, AgentID: "main", SessionID: session}
	for _, text := range texts {
		e.seq[session]++
		n := e.seq[session]
		turn.Messages = append(turn.Messages, store.Message{
			MessageID: fmt.Sprintf("%s-m%02d", session, n), Position: n, Role: role, Content: text,
			Parts: json.RawMessage(`[]`), Tokens: 10, CreatedAt: time.Date(2025, 3, 1, 12, 0, n, 0, time.UTC),
		})
	}
	turn.EventID = fmt.Sprintf("%s-e%02d", session, e.seq[session])
	if _, err := e.st.ApplyTurns(e.ctx, nil, []store.Turn{turn}); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) request(user, session, kind, id string) contract.CommitRequest {
	e.t.Helper()
	sess, err := e.st.GetSession(e.ctx, acct, session)
	upto := int64(0)
	if err == nil {
		upto = sess.NextSeq - 1
	}
	return contract.CommitRequest{V: contract.Version, RequestID: id, AccountID: acct, UserID: user, AgentID: "main",
		SessionID: session, Kind: kind, Upto: upto, CreatedAt: time.Now().UTC()}
}

func (e *env) commit(user, session, kind, id string) {
	e.t.Helper()
	if err := e.svc.Commit(e.ctx, e.request(user, session, kind, id)); err != nil {
		e.t.Fatalf("commit %s: %v", id, err)
	}
}

func (e *env) count(q string, args ...any) int {
	e.t.Helper()
	var n int
	if err := e.st.DB().QueryRowContext(e.ctx, q, args...).Scan(&n); err != nil {
		e.t.Fatalf("%s: %v", q, err)
	}
	return n
}

// outboxEvents decodes the queued events of one kind, oldest first.
func (e *env) outboxEvents(kind string) []contract.Event {
	e.t.Helper()
	rows, err := e.st.DB().QueryContext(e.ctx, "SELECT payload FROM outbox WHERE subject LIKE ? ORDER BY created_us, id", "%.events."+kind+".%")
	if err != nil {
		e.t.Fatal(err)
	}
	defer rows.Close()
	var out []contract.Event
	for rows.Next() {
		var b []byte
		if err := rows.Scan(&b); err != nil {
			e.t.Fatal(err)
		}
		var ev contract.Event
		if err := json.Unmarshal(b, &ev); err != nil {
			e.t.Fatal(err)
		}
		out = append(out, ev)
	}
	return out
}

// memories returns all memory rows of a user (active or not) by value.
func (e *env) memories(user string) map[string]store.Memory {
	e.t.Helper()
	ms, err := e.st.Memories(e.ctx, store.MemoryFilter{AccountID: acct, UserID: user})
	if err != nil {
		e.t.Fatal(err)
	}
	out := map[string]store.Memory{}
	for _, m := range ms {
		if _, dup := out[m.Value]; dup {
			e.t.Fatalf("two memory rows with value %q", m.Value)
		}
		out[m.Value] = m
	}
	return out
}

func (e *env) inIndex(user, id string) bool {
	e.t.Helper()
	_, err := e.vec.Get(e.ctx, acct, user, id)
	if errors.Is(err, vector.ErrNotFound) {
		return false
	}
	if err != nil {
		e.t.Fatal(err)
	}
	return true
}

func (e *env) archives(session string) []store.Archive {
	e.t.Helper()
	as, err := e.st.Archives(e.ctx, acct, session)
	if err != nil {
		e.t.Fatal(err)
	}
	return as
}

func numbered(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s message number %d about the weather.", prefix, i+1)
	}
	return out
}

func TestCommitRange(t *testing.T) {
	e := newEnv(t)
	e.say("alice", "s1", numbered("first", 25)...)

	// auto keeps the newest 10 active.
	e.commit("alice", "s1", contract.CommitAuto, "r-auto")
	as := e.archives("s1")
	if len(as) != 1 || as[0].FromSeq != 1 || as[0].ToSeq != 15 || as[0].State != store.StateIndexed {
		t.Fatalf("auto commit archives = %+v, want one indexed archive 1..15", as)
	}
	// A second auto commit finds nothing it may archive (the newest 10 stay): commit_no_archive.
	e.commit("alice", "s1", contract.CommitAuto, "r-auto-2")
	// compact keeps nothing.
	e.commit("alice", "s1", contract.CommitCompact, "r-compact")
	as = e.archives("s1")
	if len(as) != 2 || as[1].FromSeq != 16 || as[1].ToSeq != 25 {
		t.Fatalf("after compact archives = %+v, want a second archive 16..25", as)
	}
	// Everything archived: no_messages.
	e.commit("alice", "s1", contract.CommitSync, "r-sync")
	// upto bounds the range: messages stored after the request wait for the next commit.
	e.say("alice", "s1", numbered("second", 4)...)
	req := e.request("alice", "s1", contract.CommitSync, "r-upto")
	req.Upto = 27
	if err := e.svc.Commit(e.ctx, req); err != nil {
		t.Fatal(err)
	}
	as = e.archives("s1")
	if len(as) != 3 || as[2].FromSeq != 26 || as[2].ToSeq != 27 {
		t.Fatalf("archives = %+v, want a third archive 26..27", as)
	}
	sess, err := e.st.GetSession(e.ctx, acct, "s1")
	if err != nil {
		t.Fatal(err)
	}
	if sess.ArchivedUpto != 27 || sess.PendingTokens != 20 {
		t.Fatalf("archived_upto %d pending %d, want 27 and 20 (two active messages)", sess.ArchivedUpto, sess.PendingTokens)
	}

	got := map[string]contract.Event{}
	for _, ev := range e.outboxEvents(contract.EventCommitCompleted) {
		got[ev.RequestID] = ev
	}
	for _, c := range []struct{ id, status, reason string }{
		{"r-auto", contract.StatusCompleted, ""},
		{"r-auto-2", contract.StatusSkipped, contract.ReasonCommitNoArchive},
		{"r-compact", contract.StatusCompleted, ""},
		{"r-sync", contract.StatusSkipped, contract.ReasonNoMessages},
		{"r-upto", contract.StatusCompleted, ""},
	} {
		ev, ok := got[c.id]
		if !ok {
			t.Errorf("%s: no commit_completed event", c.id)
			continue
		}
		if ev.Status != c.status || ev.Reason != c.reason {
			t.Errorf("%s: status %q reason %q, want %q %q", c.id, ev.Status, ev.Reason, c.status, c.reason)
		}
		if c.status == contract.StatusCompleted && ev.ArchiveID == "" {
			t.Errorf("%s: completed without archive id", c.id)
		}
	}
	if n := len(e.outboxEvents(contract.EventArchiveCreated)); n != 3 {
		t.Errorf("%d archive_created events, want 3", n)
	}
}

func TestCommitSessionKeepRecentOverride(t *testing.T) {
	e := newEnv(t)
	e.say("alice", "s1", numbered("x", 8)...)
	keep := 2
	req := e.request("alice", "s1", contract.CommitAuto, "r1")
	req.KeepRecent = &keep
	if err := e.svc.Commit(e.ctx, req); err != nil {
		t.Fatal(err)
	}
	as := e.archives("s1")
	if len(as) != 1 || as[0].ToSeq != 6 {
		t.Fatalf("archives %+v, want 1..6 with keep_recent 2", as)
	}
}

func TestCommitIdempotent(t *testing.T) {
	for _, viaRunner := range []bool{false, true} {
		t.Run(fmt.Sprintf("runner=%v", viaRunner), func(t *testing.T) {
			e := newEnv(t)
			e.say("alice", "s1", "I live in Boston.", "I have a dog named Max.", "I love green tea.")
			req := e.request("alice", "s1", contract.CommitSync, "r-dup")
			if viaRunner {
				e.startService()
				data, _ := json.Marshal(req)
				// Two deliveries of one request (distinct Nats-Msg-Ids, as after the duplicate window).
				for _, id := range []string{"d1", "d2"} {
					if _, err := bus.Publish(e.ctx, e.js, e.names.Commits(acct, "s1"), id, data, nil); err != nil {
						t.Fatal(err)
					}
				}
				e.waitCommitsDrained()
			} else {
				for i := 0; i < 2; i++ {
					if err := e.svc.Commit(e.ctx, req); err != nil {
						t.Fatal(err)
					}
				}
			}
			if as := e.archives("s1"); len(as) != 1 {
				t.Fatalf("%d archives, want 1", len(as))
			}
			if n := e.count("SELECT COUNT(*) FROM memories WHERE account_id = ?", acct); n != 3 {
				t.Fatalf("%d memory rows, want 3", n)
			}
			if n := e.count("SELECT COUNT(*) FROM memory_sources WHERE account_id = ?", acct); n != 3 {
				t.Fatalf("%d memory_sources rows, want 3", n)
			}
			for _, m := range e.memories("alice") {
				if len(m.Sources) != 1 {
					t.Fatalf("memory %q sources %v, want exactly one", m.Value, m.Sources)
				}
			}
			evs := e.outboxEvents(contract.EventCommitCompleted)
			if len(evs) != 1 || evs[0].Status != contract.StatusCompleted {
				t.Fatalf("commit_completed events %+v, want one completed (a redelivery must not add a skipped one)", evs)
			}
		})
	}
}

// waitCommitsDrained waits until the COMMITS work queue is empty (every delivery acked).
func (e *env) waitCommitsDrained() {
	e.t.Helper()
	stream, err := e.js.Stream(e.ctx, e.names.Stream(bus.StreamCommits))
	if err != nil {
		e.t.Fatal(err)
	}
	testenv.Eventually(e.t, 20*time.Second, 20*time.Millisecond, func() error {
		info, err := stream.Info(e.ctx)
		if err != nil {
			e.t.Fatal(err)
		}
		if info.State.Msgs != 0 {
			return fmt.Errorf("%d commit requests still queued", info.State.Msgs)
		}
		return nil
	})
}

func TestCommitResumesAfterVectorFailure(t *testing.T) {
	e := newEnv(t)
	e.say("alice", "s1", "I live in Boston.", "I have a dog named Max.")
	e.vec.failUpserts = 1
	req := e.request("alice", "s1", contract.CommitSync, "r1")
	if err := e.svc.Commit(e.ctx, req); !errors.Is(err, errInjected) {
		t.Fatalf("first delivery: %v, want the injected failure", err)
	}
	as := e.archives("s1")
	if len(as) != 1 || as[0].State != store.StateExtracted {
		t.Fatalf("after the failure archives = %+v, want one in state extracted", as)
	}
	if n := len(e.outboxEvents(contract.EventCommitCompleted)); n != 0 {
		t.Fatalf("%d commit_completed events before indexing", n)
	}
	before := e.memories("alice")

	if err := e.svc.Commit(e.ctx, req); err != nil {
		t.Fatalf("redelivery: %v", err)
	}
	as = e.archives("s1")
	if len(as) != 1 || as[0].State != store.StateIndexed {
		t.Fatalf("after resume archives = %+v, want the same archive indexed", as)
	}
	after := e.memories("alice")
	if len(after) != 2 || len(before) != 2 {
		t.Fatalf("memories %d before, %d after resume, want 2 and 2", len(before), len(after))
	}
	for v, m := range after {
		if !before[v].UpdatedAt.Equal(m.UpdatedAt) {
			t.Errorf("memory %q was rewritten by the resume (re-extracted)", v)
		}
		if !e.inIndex("alice", m.ID) {
			t.Errorf("memory %q not in the vector index after resume", v)
		}
	}
	evs := e.outboxEvents(contract.EventCommitCompleted)
	if len(evs) != 1 || evs[0].Status != contract.StatusCompleted || evs[0].ArchiveID != as[0].ID {
		t.Fatalf("commit_completed %+v, want one completed for the archive", evs)
	}
	if n := len(e.outboxEvents(contract.EventMemoryUpserted)); n != 2 {
		t.Fatalf("%d memory_upserted events, want 2", n)
	}
}

func TestCommitBusyLock(t *testing.T) {
	e := newEnv(t)
	e.say("alice", "s1", numbered("x", 3)...)
	lease, err := e.locker.Acquire(e.ctx, lock.SessionKey(acct, "s1"), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer lease.Release(e.ctx)
	req := e.request("alice", "s1", contract.CommitSync, "r1")
	data, _ := json.Marshal(req)
	err = e.svc.handle(e.ctx, &bus.Msg{Subject: e.names.Commits(acct, "s1"), Data: data, Account: acct, SessionToken: bus.SessionToken("s1")})
	if d, ok := bus.IsBusy(err); !ok || d <= 0 {
		t.Fatalf("handle under a held lock: %v, want a bus.Busy error", err)
	}
	if len(e.archives("s1")) != 0 {
		t.Fatal("archived under a held lock")
	}
}

func TestCommitFencedByEpoch(t *testing.T) {
	e := newEnv(t)
	e.say("alice", "s1", "I live in Boston.", "I have a dog named Max.")
	stale, err := e.st.AcquireEpoch(e.ctx, acct, "s1")
	if err != nil {
		t.Fatal(err)
	}
	a := store.Archive{ID: "a1", AccountID: acct, SessionID: "s1", UserID: "alice", AgentID: "main", FromSeq: 1, ToSeq: 2,
		Kind: contract.CommitSync, State: store.StateArchived, RequestID: "r1"}
	if err := e.st.CreateArchive(e.ctx, stale, a, nil); err != nil {
		t.Fatal(err)
	}
	// Another holder takes the session (its lease expired for us): the epoch moves on.
	if _, err := e.st.AcquireEpoch(e.ctx, acct, "s1"); err != nil {
		t.Fatal(err)
	}
	if err := e.svc.advance(e.ctx, stale, a); !errors.Is(err, store.ErrFenced) {
		t.Fatalf("advance with a stale epoch: %v, want store.ErrFenced", err)
	}
	if n := e.count("SELECT COUNT(*) FROM memories"); n != 0 {
		t.Fatalf("a fenced holder wrote %d memories", n)
	}
	if as := e.archives("s1"); as[0].State != store.StateArchived {
		t.Fatalf("fenced holder moved the archive to %s", as[0].State)
	}
	b := a
	b.ID, b.FromSeq, b.ToSeq = "a2", 3, 3
	if err := e.st.CreateArchive(e.ctx, stale, b, nil); !errors.Is(err, store.ErrFenced) {
		t.Fatalf("create archive with a stale epoch: %v, want store.ErrFenced", err)
	}
	// The current holder resumes the archive.
	e.commit("alice", "s1", contract.CommitSync, "r2")
	if as := e.archives("s1"); as[0].State != store.StateIndexed {
		t.Fatalf("archive %s after resume, want indexed", as[0].State)
	}
}

func TestConflictsAndDedup(t *testing.T) {
	e := newEnv(t)
	step := 0
	tell := func(session, text string) {
		t.Helper()
		step++
		e.say("alice", session, text)
		e.commit("alice", session, contract.CommitSync, fmt.Sprintf("r%d", step))
	}

	tell("s1", "I live in Boston.")
	boston := e.memories("alice")["Boston"]
	if !boston.Active() || !e.inIndex("alice", boston.ID) {
		t.Fatalf("boston %+v not active and indexed", boston)
	}
	tell("s1", "I moved to Denver.")
	ms := e.memories("alice")
	boston, denver := ms["Boston"], ms["Denver"]
	if boston.ValidTo == nil || boston.SupersededBy != denver.ID {
		t.Fatalf("boston not superseded by denver: valid_to %v superseded_by %q (denver %s)", boston.ValidTo, boston.SupersededBy, denver.ID)
	}
	if !denver.Active() || !e.inIndex("alice", denver.ID) {
		t.Fatal("denver not active and indexed")
	}
	if e.inIndex("alice", boston.ID) {
		t.Fatal("superseded boston still in the vector index")
	}
	sup := e.outboxEvents(contract.EventMemorySuperseded)
	if len(sup) != 1 || sup[0].MemoryID != boston.ID || sup[0].SupersededBy != denver.ID {
		t.Fatalf("memory_superseded events %+v", sup)
	}

	// Boston again: the first row comes back (same id), no third row.
	tell("s1", "I moved to Boston.")
	ms = e.memories("alice")
	if len(ms) != 2 {
		t.Fatalf("%d rows after Boston → Denver → Boston, want 2", len(ms))
	}
	if ms["Boston"].ID != boston.ID || !ms["Boston"].Active() {
		t.Fatalf("boston not reactivated in place: %+v", ms["Boston"])
	}
	if ms["Denver"].SupersededBy != boston.ID || ms["Denver"].ValidTo == nil {
		t.Fatalf("denver not superseded by boston: %+v", ms["Denver"])
	}
	if !e.inIndex("alice", boston.ID) || e.inIndex("alice", denver.ID) {
		t.Fatal("index does not hold exactly the active city")
	}

	// Opposite polarity in the same slot.
	tell("s2", "I love coffee.")
	tell("s2", "I don't like coffee anymore.")
	prefs, err := e.st.Memories(e.ctx, store.MemoryFilter{AccountID: acct, UserID: "alice", Category: "preference"})
	if err != nil {
		t.Fatal(err)
	}
	var likes, dislikes store.Memory
	for _, m := range prefs {
		if m.Polarity > 0 {
			likes = m
		} else {
			dislikes = m
		}
	}
	if len(prefs) != 2 || likes.SupersededBy != dislikes.ID || !dislikes.Active() || e.inIndex("alice", likes.ID) {
		t.Fatalf("coffee preferences %+v, want the positive one superseded by the negative one", prefs)
	}

	// A near-duplicate stated in two sessions: one memory, the union of sources.
	tell("s3", "I have a dog named Max.")
	tell("s4", "I have a dog named Max.")
	dogs, err := e.st.Memories(e.ctx, store.MemoryFilter{AccountID: acct, UserID: "alice", Category: "entity"})
	if err != nil {
		t.Fatal(err)
	}
	if len(dogs) != 1 {
		t.Fatalf("%d dog memories, want 1", len(dogs))
	}
	var srcs []string
	for _, s := range dogs[0].Sources {
		srcs = append(srcs, s.SessionID+"/"+s.MessageID)
	}
	sort.Strings(srcs)
	if strings.Join(srcs, ",") != "s3/s3-m01,s4/s4-m01" {
		t.Fatalf("dog sources %v, want both sessions", srcs)
	}
	if n := e.count("SELECT COUNT(*) FROM memory_sources WHERE memory_id = ?", dogs[0].ID); n != 2 {
		t.Fatalf("%d memory_sources rows for the dog, want 2", n)
	}
}

func TestNearDuplicateTextMerges(t *testing.T) {
	e := newEnv(t)
	e.say("alice", "s1", "I think my team ships the billing release every friday afternoon.")
	e.commit("alice", "s1", contract.CommitSync, "r1")
	e.say("alice", "s2", "I think my team ships the billing release every friday afternoon!!")
	e.commit("alice", "s2", contract.CommitSync, "r2")
	all, err := e.st.Memories(e.ctx, store.MemoryFilter{AccountID: acct, UserID: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 1 || len(all[0].Sources) != 2 {
		t.Fatalf("memories %+v, want one with two sources", all)
	}
}

func TestEventsCarryIDsNotText(t *testing.T) {
	e := newEnv(t)
	texts := []string{"I live in Boston.", "I have a dog named Max.", "I love green tea.", "Remind me to call the dentist tomorrow."}
	e.say("alice", "s1", texts...)
	e.sayAs("alice", "s1", contract.RoleAssistant, "We decided to use the blue theme for the dashboard.")
	got := make(chan *nats.Msg, 64)
	sub, err := e.nc.ChanSubscribe(e.names.Prefix+".events.>", got)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	e.startRelay()
	e.commit("alice", "s1", contract.CommitCompact, "r1")
	e.say("alice", "s1", "I moved to Denver.")
	e.commit("alice", "s1", contract.CommitCompact, "r2")

	want := e.count("SELECT COUNT(*) FROM outbox WHERE subject LIKE '%.events.%'")
	if want < 8 {
		t.Fatalf("only %d events queued", want)
	}
	var words []string
	for _, tx := range append(texts, "blue theme", "Denver") {
		for _, w := range strings.Fields(strings.Trim(tx, ".")) {
			if len(w) >= 5 {
				words = append(words, strings.ToLower(w))
			}
		}
	}
	kinds := map[string]int{}
	for i := 0; i < want; i++ {
		select {
		case m := <-got:
			var ev contract.Event
			if err := json.Unmarshal(m.Data, &ev); err != nil {
				t.Fatalf("event %s: %v", m.Subject, err)
			}
			kinds[ev.Kind]++
			if ev.EventID == "" || ev.AccountID != acct || !strings.HasPrefix(m.Subject, e.names.Prefix+".events."+ev.Kind+".") {
				t.Errorf("event %s malformed: %s", m.Subject, m.Data)
			}
			low := strings.ToLower(string(m.Data))
			for _, w := range words {
				if strings.Contains(low, w) {
					t.Errorf("event %s carries user text %q: %s", ev.Kind, w, m.Data)
				}
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("received %d of %d events", i, want)
		}
	}
	for _, k := range []string{contract.EventArchiveCreated, contract.EventMemoryUpserted, contract.EventMemorySuperseded, contract.EventCommitCompleted} {
		if kinds[k] == 0 {
			t.Errorf("no %s event seen (%v)", k, kinds)
		}
	}
}

func TestTombstonedSessionDropped(t *testing.T) {
	for _, c := range []struct{ name, session string }{{"session", "s1"}, {"user", ""}} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			e.say("alice", "s1", "I live in Boston.", "I have a dog named Max.")
			if _, err := e.st.DB().ExecContext(e.ctx, "INSERT INTO tombstones (account_id, user_id, session_id, created_us) VALUES (?, ?, ?, ?)",
				acct, "alice", c.session, time.Now().UnixMicro()); err != nil {
				t.Fatal(err)
			}
			outbox := e.count("SELECT COUNT(*) FROM outbox")
			req := e.request("alice", "s1", contract.CommitSync, "r1")
			data, _ := json.Marshal(req)
			if err := e.svc.handle(e.ctx, &bus.Msg{Subject: e.names.Commits(acct, "s1"), Data: data, Account: acct, SessionToken: "s1"}); err != nil {
				t.Fatalf("handle: %v, want the commit dropped (acked)", err)
			}
			if n := len(e.archives("s1")); n != 0 {
				t.Fatalf("%d archives of a tombstoned session", n)
			}
			if n := e.count("SELECT COUNT(*) FROM memories"); n != 0 {
				t.Fatalf("%d memories of a tombstoned session", n)
			}
			if n := e.count("SELECT COUNT(*) FROM outbox"); n != outbox {
				t.Fatalf("outbox grew from %d to %d", outbox, n)
			}
		})
	}
}

func TestHandleRejectsMismatchedSubject(t *testing.T) {
	e := newEnv(t)
	e.say("alice", "s1", numbered("x", 3)...)
	req := e.request("alice", "s1", contract.CommitSync, "r1")
	data, _ := json.Marshal(req)
	err := e.svc.handle(e.ctx, &bus.Msg{Subject: e.names.Commits("globex", "s1"), Data: data, Account: "globex", SessionToken: "s1"})
	if !bus.IsPermanent(err) {
		t.Fatalf("handle of a request whose account disagrees with its subject: %v, want permanent", err)
	}
	if len(e.archives("s1")) != 0 {
		t.Fatal("archived a mismatched request")
	}
}

func (e *env) callCommit(r contract.CommitRPCRequest) contract.CommitResult {
	e.t.Helper()
	r.V = contract.Version
	ctx, cancel := context.WithTimeout(e.ctx, 30*time.Second)
	defer cancel()
	var res contract.CommitResult
	if err := bus.Call(ctx, e.nc, e.names.RPC(acct, "commit"), r, &res); err != nil {
		e.t.Fatalf("commit rpc %s: %v", r.RequestID, err)
	}
	return res
}

func TestSyncCommitRPC(t *testing.T) {
	e := newEnv(t)
	e.startRelay()
	e.startService()
	e.say("alice", "s1", "I live in Boston.", "I have a dog named Max.", "I love green tea.")

	res := e.callCommit(contract.CommitRPCRequest{RequestID: "rpc-1", UserID: "alice", SessionID: "s1", Wait: true, TimeoutMS: 20000})
	as := e.archives("s1")
	if len(as) != 1 {
		t.Fatalf("%d archives", len(as))
	}
	if !res.OK || res.Status != contract.StatusCompleted || !res.Compacted || res.ArchiveID != as[0].ID {
		t.Fatalf("result %+v, want completed with archive %s", res, as[0].ID)
	}
	if res.Memories["profile"] != 1 || res.Memories["entity"] != 1 || res.Memories["preference"] != 1 {
		t.Fatalf("memories by category %v", res.Memories)
	}
	if res.TokensBefore != 30 || res.TokensAfter != 0 {
		t.Fatalf("tokens %d → %d, want 30 → 0", res.TokensBefore, res.TokensAfter)
	}

	// The same request id again: the stored result, nothing new archived.
	e.say("alice", "s1", "I moved to Denver.")
	again := e.callCommit(contract.CommitRPCRequest{RequestID: "rpc-1", UserID: "alice", SessionID: "s1", Wait: true, TimeoutMS: 20000})
	if again.ArchiveID != res.ArchiveID || again.Status != res.Status || len(e.archives("s1")) != 1 {
		t.Fatalf("repeated request: %+v, want the stored %+v", again, res)
	}

	// A session that does not exist, and another user's session: skipped/no_messages alike.
	for _, r := range []contract.CommitRPCRequest{
		{RequestID: "rpc-3", UserID: "alice", SessionID: "nope", Wait: true, TimeoutMS: 5000},
		{RequestID: "rpc-4", UserID: "mallory", SessionID: "s1", Wait: true, TimeoutMS: 5000},
	} {
		got := e.callCommit(r)
		if !got.OK || got.Status != contract.StatusSkipped || got.Reason != contract.ReasonNoMessages {
			t.Errorf("%s (%s/%s): %+v, want skipped/no_messages", r.RequestID, r.UserID, r.SessionID, got)
		}
	}
	if n := len(e.archives("s1")); n != 1 {
		t.Fatalf("a foreign user's commit archived something: %d archives", n)
	}

	// Wait false: accepted at once; the commit still runs.
	acc := e.callCommit(contract.CommitRPCRequest{RequestID: "rpc-2", UserID: "alice", SessionID: "s1", Wait: false})
	if !acc.OK || acc.Status != contract.StatusAccepted {
		t.Fatalf("wait=false: %+v, want accepted", acc)
	}
	testenv.Eventually(t, 20*time.Second, 20*time.Millisecond, func() error {
		if n := len(e.archives("s1")); n != 2 {
			return fmt.Errorf("the accepted commit has not archived: %d archives, want 2", n)
		}
		return nil
	})

	// Nothing left to archive: skipped/no_messages through the consumer.
	none := e.callCommit(contract.CommitRPCRequest{RequestID: "rpc-5", UserID: "alice", SessionID: "s1", Wait: true, TimeoutMS: 20000})
	if none.Status != contract.StatusSkipped || none.Reason != contract.ReasonNoMessages || none.Compacted {
		t.Fatalf("empty commit: %+v, want skipped/no_messages", none)
	}

	// A held session lock and a short timeout: timeout.
	e.say("alice", "s1", "I moved to Chicago.")
	lease, err := e.locker.Acquire(e.ctx, lock.SessionKey(acct, "s1"), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer lease.Release(e.ctx)
	to := e.callCommit(contract.CommitRPCRequest{RequestID: "rpc-6", UserID: "alice", SessionID: "s1", Wait: true, TimeoutMS: 300})
	if to.OK || to.Status != contract.StatusTimeout || to.Reason != contract.ReasonTimeout {
		t.Fatalf("busy commit: %+v, want timeout", to)
	}
}

func TestSyncCommitRPCBadRequest(t *testing.T) {
	e := newEnv(t)
	e.startService()
	ctx, cancel := context.WithTimeout(e.ctx, 10*time.Second)
	defer cancel()
	err := bus.Call(ctx, e.nc, e.names.RPC(acct, "commit"), contract.CommitRPCRequest{V: 1, SessionID: "s1"}, nil)
	var ce *bus.RPCCallError
	if !errors.As(err, &ce) || ce.Code != bus.CodeBadRequest {
		t.Fatalf("commit without request_id: %v, want bad_request", err)
	}
}

func TestConflictInsideOneArchive(t *testing.T) {
	e := newEnv(t)
	e.say("alice", "s1", "I live in Boston.", "I moved to Denver.", "I moved to Austin.")
	e.commit("alice", "s1", contract.CommitSync, "r1")
	ms := e.memories("alice")
	boston, denver, austin := ms["Boston"], ms["Denver"], ms["Austin"]
	if !austin.Active() || !e.inIndex("alice", austin.ID) {
		t.Fatalf("austin %+v not active and indexed", austin)
	}
	if boston.SupersededBy != denver.ID || denver.SupersededBy != austin.ID {
		t.Fatalf("chain not superseded in order: boston→%q denver→%q (denver %s, austin %s)", boston.SupersededBy, denver.SupersededBy, denver.ID, austin.ID)
	}
	if e.inIndex("alice", boston.ID) || e.inIndex("alice", denver.ID) {
		t.Fatal("a superseded memory is in the vector index")
	}
}
