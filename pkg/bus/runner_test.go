package bus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/membus/membus/pkg/testenv"
)

// fakeStore is a store the handler writes to; it can be taken "down" (its probe fails and
// writes error) and counts every write per id.
type fakeStore struct {
	mu             sync.Mutex
	down           bool
	stored         map[string]int
	order          []string
	probes         int
	callsWhileDown int
}

func newFakeStore() *fakeStore { return &fakeStore{stored: map[string]int{}} }

func (s *fakeStore) setDown(down bool) { s.mu.Lock(); s.down = down; s.mu.Unlock() }

func (s *fakeStore) probe(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.probes++
	if s.down {
		return errors.New("dial tcp 127.0.0.1:3306: connection refused")
	}
	return nil
}

func (s *fakeStore) write(id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.down {
		s.callsWhileDown++
		return errors.New("write: connection refused")
	}
	s.stored[id]++
	s.order = append(s.order, id)
	return nil
}

func (s *fakeStore) count(id string) int { s.mu.Lock(); defer s.mu.Unlock(); return s.stored[id] }
func (s *fakeStore) total() int          { s.mu.Lock(); defer s.mu.Unlock(); return len(s.stored) }

type payload struct {
	ID string `json:"id"`
}

// storeHandler decodes {"id": …} (a bad payload is permanent) and writes the id.
func storeHandler(s *fakeStore) Handler {
	return func(ctx context.Context, m *Msg) error {
		var p payload
		if err := json.Unmarshal(m.Data, &p); err != nil || p.ID == "" {
			return Permanent(fmt.Errorf("decode: %w", err))
		}
		return s.write(p.ID)
	}
}

// outcomes counts OnOutcome calls.
type outcomes struct {
	mu sync.Mutex
	n  map[string]int
}

func (o *outcomes) hook(s string) { o.mu.Lock(); defer o.mu.Unlock(); o.n[s]++ }
func (o *outcomes) get(s string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.n[s]
}
func newOutcomes() *outcomes { return &outcomes{n: map[string]int{}} }

// String is a copy of the counts, taken under the lock (the runner may still be counting).
func (o *outcomes) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return fmt.Sprint(o.n)
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func fastBackoff(int) time.Duration { return 20 * time.Millisecond }

// startRunner creates and runs a runner; the returned stop cancels it and checks Run's result.
func startRunner(t *testing.T, b testBus, cfg RunnerConfig) (stop func()) {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = quietLogger()
	}
	if cfg.Backoff == nil {
		cfg.Backoff = fastBackoff
	}
	if cfg.FetchWait == 0 {
		cfg.FetchWait = 200 * time.Millisecond
	}
	r, err := NewRunner(b.js, b.n, cfg)
	if err != nil {
		t.Fatalf("NewRunner: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Run returned %v, want nil on cancel", err)
				}
			case <-time.After(10 * time.Second):
				t.Error("Run did not return after cancel")
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

func publish(t *testing.T, b testBus, subject, id string, data []byte) {
	t.Helper()
	if _, err := Publish(context.Background(), b.js, subject, id, data, nil); err != nil {
		t.Fatalf("publish %s: %v", subject, err)
	}
}

func publishID(t *testing.T, b testBus, subject, id string) {
	t.Helper()
	data, _ := json.Marshal(payload{ID: id})
	publish(t, b, subject, id, data)
}

func subjectFor(n Names, kind, account, session string) string {
	switch kind {
	case StreamTurns:
		return n.Turns(account, session)
	case StreamCommits:
		return n.Commits(account, session)
	default:
		return n.Event("archive_created", account, session)
	}
}

func listDLQ(t *testing.T, b testBus) []DeadLetter {
	t.Helper()
	dls, err := ListDLQ(context.Background(), b.js, b.n, "", 1000)
	if err != nil {
		t.Fatalf("ListDLQ: %v", err)
	}
	return dls
}

func streamMsgs(t *testing.T, b testBus, kind string) uint64 {
	t.Helper()
	s, err := b.js.Stream(context.Background(), b.n.Stream(kind))
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Msgs
}

func TestRunnerDeadLettersInvalidPayloadsAndKeepsGoing(t *testing.T) {
	for _, kind := range []string{StreamTurns, StreamCommits, StreamEvents} {
		t.Run(kind, func(t *testing.T) {
			b := newTestBus(t)
			store := newFakeStore()
			out := newOutcomes()
			// The runner (and its consumer) exists before publishing: EVENTS keeps messages
			// only for existing interest.
			startRunner(t, b, RunnerConfig{Service: "svc", Stream: kind, Handler: storeHandler(store),
				Probes: []Probe{{Name: "store", Check: store.probe}}, OnOutcome: out.hook})

			publishID(t, b, subjectFor(b.n, kind, "acme", "s1"), "good-1")
			publish(t, b, subjectFor(b.n, kind, "acme", "s1"), "bad-1", []byte("{not json"))
			publishID(t, b, subjectFor(b.n, kind, "acme", "s1"), "good-2")
			if kind == StreamTurns {
				// A subject the runner cannot parse (upper-case account) is dead-lettered too.
				publishID(t, b, "t.turns.ACME.s1", "bad-subject")
			}
			publishID(t, b, subjectFor(b.n, kind, "acme", "s2"), "good-3")

			eventually(t, 10*time.Second, "good messages stored", func() bool { return store.total() == 3 })
			wantDLQ := 1
			if kind == StreamTurns {
				wantDLQ = 2
			}
			var dls []DeadLetter
			eventually(t, 10*time.Second, "dead letters", func() bool { dls = listDLQ(t, b); return len(dls) == wantDLQ })
			for _, id := range []string{"good-1", "good-2", "good-3"} {
				if c := store.count(id); c != 1 {
					t.Errorf("%s stored %d times, want 1", id, c)
				}
			}
			byOrig := map[string]DeadLetter{}
			for _, dl := range dls {
				byOrig[dl.OriginalSubject] = dl
			}
			bad := byOrig[subjectFor(b.n, kind, "acme", "s1")]
			if bad.Reason == "" || bad.Stream != kind || bad.Failures != 1 || bad.PayloadText != "{not json" {
				t.Errorf("dead letter = %+v; want reason, stream %s, 1 failure, original payload", bad.DLQEnvelope, kind)
			}
			if bad.OriginalSubject != subjectFor(b.n, kind, "acme", "s1") || bad.Subject != b.n.DLQ(kind, "acme", "s1") {
				t.Errorf("dead letter subjects: original %q, dlq %q", bad.OriginalSubject, bad.Subject)
			}
			if kind == StreamTurns {
				bs, ok := byOrig["t.turns.ACME.s1"]
				if !ok || bs.Subject != b.n.DLQ(kind, "_", "_") || bs.Reason == "" {
					t.Errorf("bad-subject letter: %+v on %s", bs.DLQEnvelope, bs.Subject)
				}
			}
			if kind != StreamEvents {
				eventually(t, 5*time.Second, "work queue emptied", func() bool { return streamMsgs(t, b, kind) == 0 })
			}
			// A message's outcome is counted once its ack is confirmed, after the handler stored
			// it: wait for the counts rather than read them the moment the store is full.
			eventually(t, 5*time.Second, "outcomes counted", func() bool {
				return out.get(OutcomeDLQ) == wantDLQ && out.get(OutcomeAck) == 3
			})
			if out.get(OutcomeRetry) != 0 {
				t.Errorf("outcomes = %v", out)
			}
		})
	}
}

func TestRunnerOutageDeadLettersNothingAndLosesNothing(t *testing.T) {
	b := newTestBus(t)
	store := newFakeStore()
	store.setDown(true)
	out := newOutcomes()
	startRunner(t, b, RunnerConfig{Service: "ingest", Stream: StreamTurns, Handler: storeHandler(store),
		Probes: []Probe{{Name: "sql", Check: store.probe}}, OnOutcome: out.hook,
		MaxFailures: 1, // any failure counted against a message would dead-letter it at once
		Batch:       4})
	const n = 20
	for i := range n {
		publishID(t, b, b.n.Turns("acme", "s"+strconv.Itoa(i%3)), "m"+strconv.Itoa(i))
	}
	// Stay down while the runner re-probes many times.
	eventually(t, 10*time.Second, "runner re-probing", func() bool {
		store.mu.Lock()
		defer store.mu.Unlock()
		return store.probes >= 10
	})
	store.mu.Lock()
	whileDown := store.callsWhileDown
	store.mu.Unlock()
	if whileDown != 1 {
		t.Errorf("handler called %d times during the outage, want 1 (the runner must stop fetching)", whileDown)
	}
	store.setDown(false)

	eventually(t, 15*time.Second, "all messages stored", func() bool { return store.total() == n })
	eventually(t, 5*time.Second, "work queue emptied", func() bool { return streamMsgs(t, b, StreamTurns) == 0 })
	for i := range n {
		if c := store.count("m" + strconv.Itoa(i)); c != 1 {
			t.Errorf("m%d stored %d times, want exactly once", i, c)
		}
	}
	if dls := listDLQ(t, b); len(dls) != 0 {
		t.Errorf("%d messages dead-lettered during an outage: %+v", len(dls), dls[0].DLQEnvelope)
	}
	if out.get(OutcomeRetry) != 0 || out.get(OutcomeDLQ) != 0 || out.get(OutcomeOutage) == 0 {
		t.Errorf("outcomes = %v; want outages, no retries, no dead letters", out)
	}
}

func TestRunnerDeadLettersAfterMaxFailuresAcrossRestarts(t *testing.T) {
	b := newTestBus(t)
	var calls atomic.Int32
	failing := func(ctx context.Context, m *Msg) error {
		if string(m.Data) == "ok" {
			return nil
		}
		calls.Add(1)
		return errors.New("boom: cannot apply")
	}
	healthy := []Probe{{Name: "sql", Check: func(context.Context) error { return nil }}}

	// First replica: sees one failure, then is stopped. Its 300ms backoff keeps the message
	// away until the second replica runs.
	out1 := newOutcomes()
	stop1 := startRunner(t, b, RunnerConfig{Service: "extract", Stream: StreamCommits, Handler: failing, Probes: healthy,
		MaxFailures: 3, OnOutcome: out1.hook, Backoff: func(int) time.Duration { return 300 * time.Millisecond }})
	publish(t, b, b.n.Commits("acme", "s1"), "c1", []byte("poison"))
	eventually(t, 10*time.Second, "first failure counted", func() bool { return out1.get(OutcomeRetry) == 1 })
	stop1()

	// Second replica (a restart): the count continues from the KV bucket.
	out2 := newOutcomes()
	startRunner(t, b, RunnerConfig{Service: "extract", Stream: StreamCommits, Handler: failing, Probes: healthy,
		MaxFailures: 3, OnOutcome: out2.hook})
	var dls []DeadLetter
	eventually(t, 10*time.Second, "dead letter", func() bool { dls = listDLQ(t, b); return len(dls) == 1 })
	if got := calls.Load(); got != 3 {
		t.Errorf("handler failed %d times before dead-lettering, want MaxFailures=3", got)
	}
	if dls[0].Failures != 3 || dls[0].Reason != "boom: cannot apply" || dls[0].Stream != StreamCommits {
		t.Errorf("dead letter = %+v", dls[0].DLQEnvelope)
	}
	raw, err := GetDLQ(context.Background(), b.js, b.n, dls[0].Seq)
	if err != nil || raw.Failures != 3 {
		t.Fatalf("GetDLQ = %+v, %v", raw, err)
	}
	kv, err := b.js.KeyValue(context.Background(), b.n.FailureBucket())
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "failure count deleted", func() bool {
		_, err := kv.Get(context.Background(), StreamCommits+".1")
		return errors.Is(err, jetstream.ErrKeyNotFound)
	})
	// The runner keeps processing.
	publish(t, b, b.n.Commits("acme", "s1"), "c2", []byte("ok"))
	eventually(t, 10*time.Second, "next message acked", func() bool { return out2.get(OutcomeAck) == 1 })
}

func TestRunnerBusyDelaysOnlyItsOwnMessage(t *testing.T) {
	b := newTestBus(t)
	store := newFakeStore()
	var busy atomic.Int32
	inner := storeHandler(store)
	h := func(ctx context.Context, m *Msg) error {
		if m.Header.Get("Nats-Msg-Id") == "locked" && (store.total() < 5 || busy.Load() < 2) {
			busy.Add(1)
			return Busy(errors.New("session lock held"), 50*time.Millisecond)
		}
		return inner(ctx, m)
	}
	out := newOutcomes()
	startRunner(t, b, RunnerConfig{Service: "ingest", Stream: StreamTurns, Handler: h, MaxFailures: 1, Batch: 1,
		Probes: []Probe{{Name: "sql", Check: store.probe}}, OnOutcome: out.hook})
	publishID(t, b, b.n.Turns("acme", "s1"), "locked")
	for i := range 5 {
		publishID(t, b, b.n.Turns("acme", "s2"), "other"+strconv.Itoa(i))
	}
	eventually(t, 10*time.Second, "all stored", func() bool { return store.total() == 6 })
	store.mu.Lock()
	order := append([]string(nil), store.order...)
	store.mu.Unlock()
	if order[len(order)-1] != "locked" {
		t.Errorf("store order %v: the busy message should land last, after the others flowed", order)
	}
	if store.count("locked") != 1 || busy.Load() < 2 {
		t.Errorf("locked stored %d times after %d busy answers", store.count("locked"), busy.Load())
	}
	if dls := listDLQ(t, b); len(dls) != 0 {
		t.Errorf("busy message dead-lettered (busy must not count, MaxFailures=1)")
	}
	if out.get(OutcomeRetry) != 0 || out.get(OutcomeBusy) < 2 {
		t.Errorf("outcomes = %v", out)
	}
}

func TestRunnerReplicasShareTheWorkOnce(t *testing.T) {
	b := newTestBus(t)
	var mu sync.Mutex
	handled := map[string]int{}
	perReplica := [2]int{}
	mk := func(replica int) Handler {
		return func(ctx context.Context, m *Msg) error {
			time.Sleep(time.Millisecond) // the scenario: work that takes a while, so both replicas fetch
			mu.Lock()
			defer mu.Unlock()
			handled[m.Header.Get("Nats-Msg-Id")]++
			perReplica[replica]++
			return nil
		}
	}
	for i := range 2 {
		startRunner(t, b, RunnerConfig{Service: "ingest", Stream: StreamTurns, Handler: mk(i), Batch: 5})
	}
	const n = 200
	for i := range n {
		publish(t, b, b.n.Turns("acme", "s"+strconv.Itoa(i%7)), "m"+strconv.Itoa(i), []byte("x"))
	}
	eventually(t, 20*time.Second, "all handled", func() bool { mu.Lock(); defer mu.Unlock(); return len(handled) == n })
	eventually(t, 5*time.Second, "work queue emptied", func() bool { return streamMsgs(t, b, StreamTurns) == 0 })
	// A wrong redelivery would come within the fetch cycle; 200 ms is several of them.
	testenv.Consistently(t, 200*time.Millisecond, 20*time.Millisecond, func() error {
		mu.Lock()
		defer mu.Unlock()
		for id, c := range handled {
			if c != 1 {
				return fmt.Errorf("%s handled %d times", id, c)
			}
		}
		return nil
	})
	mu.Lock()
	defer mu.Unlock()
	if perReplica[0] == 0 || perReplica[1] == 0 {
		t.Errorf("work not shared: %v", perReplica)
	}
}

func TestRunnerInProgressKeepsLongWorkFromRedelivery(t *testing.T) {
	b := newTestBus(t)
	var calls atomic.Int32
	slow := func(ctx context.Context, m *Msg) error {
		calls.Add(1)
		time.Sleep(1500 * time.Millisecond) // 3× AckWait
		return nil
	}
	out := newOutcomes()
	for range 2 {
		startRunner(t, b, RunnerConfig{Service: "extract", Stream: StreamCommits, Handler: slow, AckWait: 500 * time.Millisecond, OnOutcome: out.hook})
	}
	publish(t, b, b.n.Commits("acme", "s1"), "c1", []byte("x"))
	eventually(t, 10*time.Second, "acked", func() bool { return out.get(OutcomeAck) == 1 })
	// A redelivery would come after AckWait (500 ms).
	testenv.Consistently(t, 600*time.Millisecond, 50*time.Millisecond, func() error {
		if got := calls.Load(); got != 1 {
			return fmt.Errorf("slow handler ran %d times; InProgress should keep the message from being redelivered", got)
		}
		return nil
	})
}

func TestRunnerDrainFinishesTheInFlightBatch(t *testing.T) {
	b := newTestBus(t)
	started := make(chan struct{})
	release := make(chan struct{})
	var handled atomic.Int32
	h := func(ctx context.Context, m *Msg) error {
		close(started)
		<-release
		if ctx.Err() != nil {
			return ctx.Err() // the runner must not hand a cancelled context to the durable write
		}
		handled.Add(1)
		return nil
	}
	stop := startRunner(t, b, RunnerConfig{Service: "ingest", Stream: StreamTurns, Handler: h})
	publish(t, b, b.n.Turns("acme", "s1"), "m1", []byte("x"))
	<-started
	stopped := make(chan struct{})
	go func() { stop(); close(stopped) }()
	time.Sleep(50 * time.Millisecond) // the scenario: the drain begins while the handler still works
	close(release)
	<-stopped
	if handled.Load() != 1 {
		t.Fatal("in-flight message not finished")
	}
	// The ack is sent unconfirmed (runner.go, ackAll) and flushed as the drain closes the
	// connection; the server applies it a moment later, so the stream empties soon after
	// stop returns, not necessarily by then. Never is the failure: the ack was not sent.
	eventually(t, 5*time.Second, "the in-flight message acked (TURNS empty after the drain)", func() bool {
		return streamMsgs(t, b, StreamTurns) == 0
	})
}

func TestRunnerBatchHandler(t *testing.T) {
	b := newTestBus(t)
	store := newFakeStore()
	var batches atomic.Int32
	bh := func(ctx context.Context, msgs []*Msg) []error {
		batches.Add(1)
		errs := make([]error, len(msgs))
		for i, m := range msgs {
			if m.Account != "acme" || m.SessionToken == "" || m.StreamSeq == 0 || m.NumDelivered == 0 {
				errs[i] = Permanent(fmt.Errorf("metadata missing: %+v", m))
				continue
			}
			errs[i] = storeHandler(store)(ctx, m)
		}
		return errs
	}
	// Publish first, so the first Fetch returns several messages.
	for i := range 10 {
		publishID(t, b, b.n.Turns("acme", "s1"), "m"+strconv.Itoa(i))
	}
	publish(t, b, b.n.Turns("acme", "s1"), "bad", []byte("nope"))
	var acked, ackCalls atomic.Int32
	onAcked := func(n int, took time.Duration) {
		if took <= 0 {
			t.Errorf("OnAcked(%d, %v): no time taken", n, took)
		}
		acked.Add(int32(n))
		ackCalls.Add(1)
	}
	startRunner(t, b, RunnerConfig{Service: "ingest", Stream: StreamTurns, BatchHandler: bh, Batch: 64,
		Probes: []Probe{{Name: "sql", Check: store.probe}}, OnAcked: onAcked})
	eventually(t, 10*time.Second, "stored", func() bool { return store.total() == 10 })
	eventually(t, 10*time.Second, "acks reported", func() bool { return acked.Load() == 10 })
	var dls []DeadLetter
	eventually(t, 10*time.Second, "bad payload dead-lettered", func() bool { dls = listDLQ(t, b); return len(dls) == 1 })
	if dls[0].PayloadText != "nope" {
		t.Errorf("dead letter %+v", dls[0].DLQEnvelope)
	}
	if got := batches.Load(); got > 3 {
		t.Errorf("%d batches for 11 queued messages, want them batched", got)
	}
	if calls := ackCalls.Load(); calls > batches.Load() {
		t.Errorf("OnAcked called %d times for %d batches, want at most once a batch", calls, batches.Load())
	}
}

func TestRunnerRecoversPanics(t *testing.T) {
	b := newTestBus(t)
	h := func(ctx context.Context, m *Msg) error { panic("nil map") }
	startRunner(t, b, RunnerConfig{Service: "ingest", Stream: StreamTurns, Handler: h, MaxFailures: 2})
	publish(t, b, b.n.Turns("acme", "s1"), "m1", []byte("x"))
	var dls []DeadLetter
	eventually(t, 10*time.Second, "panicking message dead-lettered", func() bool { dls = listDLQ(t, b); return len(dls) == 1 })
	if dls[0].Failures != 2 {
		t.Errorf("failures = %d, want 2", dls[0].Failures)
	}
}

func TestNewRunnerValidates(t *testing.T) {
	b := newTestBus(t)
	h := func(context.Context, *Msg) error { return nil }
	bh := func(context.Context, []*Msg) []error { return nil }
	tests := []struct {
		name string
		cfg  RunnerConfig
	}{
		{"no handler", RunnerConfig{Service: "s", Stream: StreamTurns}},
		{"both handlers", RunnerConfig{Service: "s", Stream: StreamTurns, Handler: h, BatchHandler: bh}},
		{"DLQ is not consumable", RunnerConfig{Service: "s", Stream: StreamDLQ, Handler: h}},
		{"unknown stream", RunnerConfig{Service: "s", Stream: "turns", Handler: h}},
		{"service with a dot", RunnerConfig{Service: "a.b", Stream: StreamTurns, Handler: h}},
		{"probe without check", RunnerConfig{Service: "s", Stream: StreamTurns, Handler: h, Probes: []Probe{{Name: "x"}}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := NewRunner(b.js, b.n, tc.cfg); !errors.Is(err, ErrRunnerConfig) {
				t.Fatalf("err = %v, want ErrRunnerConfig", err)
			}
		})
	}
}

func TestErrorMarkers(t *testing.T) {
	base := errors.New("x")
	if !IsPermanent(fmt.Errorf("wrap: %w", Permanent(base))) || IsPermanent(base) || Permanent(nil) != nil {
		t.Error("Permanent marker")
	}
	if d, ok := IsBusy(fmt.Errorf("wrap: %w", Busy(base, time.Second))); !ok || d != time.Second {
		t.Error("Busy marker")
	}
	if _, ok := IsBusy(base); ok || Busy(nil, time.Second) != nil {
		t.Error("Busy on a plain error")
	}
	if !errors.Is(Permanent(base), base) {
		t.Error("Permanent does not unwrap")
	}
}
