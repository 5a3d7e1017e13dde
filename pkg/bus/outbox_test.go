package bus

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/membus/membus/pkg/testenv"
)

// memOutbox is an in-memory OutboxStore honouring the SKIP LOCKED contract: a claimed row is
// invisible to other claimers until its claim ends.
type memOutbox struct {
	mu      sync.Mutex
	rows    []*memRow
	fnCalls map[string]int
	claims  int // Claim calls: the relay's drains
}

type memRow struct {
	OutboxRow
	claimed bool
	sent    bool
	sentAt  time.Time
	dead    string
}

// hasAnyPrefix is the store's subject filter: nil matches every subject.
func hasAnyPrefix(subject string, prefixes []string) bool {
	if prefixes == nil {
		return true
	}
	for _, p := range prefixes {
		if strings.HasPrefix(subject, p) {
			return true
		}
	}
	return false
}

func newMemOutbox() *memOutbox { return &memOutbox{fnCalls: map[string]int{}} }

func (s *memOutbox) insert(rows ...OutboxRow) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range rows {
		s.rows = append(s.rows, &memRow{OutboxRow: r})
	}
}

func (s *memOutbox) Claim(ctx context.Context, limit int, subjects []string, fn func(ctx context.Context, row OutboxRow) error) (int, error) {
	s.mu.Lock()
	s.claims++
	var mine []*memRow
	for _, r := range s.rows {
		if len(mine) == limit {
			break
		}
		if !r.sent && r.dead == "" && !r.claimed && hasAnyPrefix(r.Subject, subjects) {
			r.claimed = true
			mine = append(mine, r)
		}
	}
	s.mu.Unlock()

	marked := 0
	var firstErr error
	results := make([]error, 0, len(mine))
	for _, r := range mine {
		s.mu.Lock()
		s.fnCalls[r.ID]++
		s.mu.Unlock()
		err := fn(ctx, r.OutboxRow)
		results = append(results, err)
		if err != nil && !errors.Is(err, ErrUnpublishable) {
			firstErr = err
			break
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, r := range mine {
		r.claimed = false
		if i >= len(results) {
			continue
		}
		switch err := results[i]; {
		case err == nil:
			r.sent, r.sentAt = true, time.Now()
			marked++
		case errors.Is(err, ErrUnpublishable):
			r.dead = err.Error()
			marked++
		default:
			r.Attempts++
		}
	}
	_ = firstErr // the relay sees the error through its own fn; the store reports marked rows
	return marked, nil
}

func (s *memOutbox) Prune(ctx context.Context, sentBefore time.Time) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	kept := s.rows[:0]
	n := 0
	for _, r := range s.rows {
		if r.sent && r.sentAt.Before(sentBefore) {
			n++
			continue
		}
		kept = append(kept, r)
	}
	s.rows = kept
	return n, nil
}

func (s *memOutbox) state() (sent, dead, unsent int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.rows {
		switch {
		case r.sent:
			sent++
		case r.dead != "":
			dead++
		default:
			unsent++
		}
	}
	return
}

// countingStore counts the rows one relay claimed.
type countingStore struct {
	*memOutbox
	calls atomic.Int32
}

func (c *countingStore) Claim(ctx context.Context, limit int, subjects []string, fn func(ctx context.Context, row OutboxRow) error) (int, error) {
	return c.memOutbox.Claim(ctx, limit, subjects, func(ctx context.Context, row OutboxRow) error {
		c.calls.Add(1)
		return fn(ctx, row)
	})
}

func startRelay(t *testing.T, b testBus, store OutboxStore, cfg RelayConfig) *Relay {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = quietLogger()
	}
	r := NewRelay(b.js, b.n, store, cfg)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("relay Run = %v, want nil", err)
		}
	})
	return r
}

// deliveries reads every message of COMMITS once through a fresh consumer and counts them
// per Nats-Msg-Id.
func deliveries(t *testing.T, b testBus, want int) map[string]int {
	t.Helper()
	ctx := context.Background()
	cons, err := b.js.CreateOrUpdateConsumer(ctx, b.n.Stream(StreamCommits), jetstream.ConsumerConfig{
		Durable: "count", AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	total := 0
	testenv.Eventually(t, 10*time.Second, time.Millisecond, func() error {
		batch, err := cons.Fetch(want-total, jetstream.FetchMaxWait(500*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		for m := range batch.Messages() {
			got[m.Headers().Get(jetstream.MsgIDHeader)]++
			total++
			_ = m.Ack()
		}
		if total < want {
			return fmt.Errorf("%d of %d commit requests published", total, want)
		}
		return nil
	})
	// Nothing beyond want.
	batch, err := cons.Fetch(1, jetstream.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	for m := range batch.Messages() {
		got[m.Headers().Get(jetstream.MsgIDHeader)]++
	}
	return got
}

func outboxRows(n Names, count int) []OutboxRow {
	rows := make([]OutboxRow, count)
	for i := range rows {
		id := "row-" + strconv.Itoa(i)
		rows[i] = OutboxRow{ID: id, Subject: n.Commits("acme", "s"+strconv.Itoa(i%5)), Payload: []byte(`{"id":"` + id + `"}`), CreatedAt: time.Now()}
	}
	return rows
}

func TestRelayCrashBetweenWriteAndPublishLosesNothing(t *testing.T) {
	b := newTestBus(t)
	store := newMemOutbox()
	// The rows were committed with their business writes, then the process died before any
	// publish: no relay ran. A relay started later publishes them all.
	const n = 50
	store.insert(outboxRows(b.n, n)...)
	startRelay(t, b, store, RelayConfig{Interval: 20 * time.Millisecond, Batch: 7})
	eventually(t, 10*time.Second, "all rows sent", func() bool { sent, _, _ := store.state(); return sent == n })
	got := deliveries(t, b, n)
	if len(got) != n {
		t.Fatalf("%d distinct messages in COMMITS, want %d", len(got), n)
	}
	for id, c := range got {
		if c != 1 {
			t.Errorf("%s delivered %d times", id, c)
		}
	}
}

func TestRelayTwoRelaysNeverPublishARowTwice(t *testing.T) {
	b := newTestBus(t)
	store := newMemOutbox()
	const n = 300
	store.insert(outboxRows(b.n, n)...)
	a, c := &countingStore{memOutbox: store}, &countingStore{memOutbox: store}
	startRelay(t, b, a, RelayConfig{Interval: 5 * time.Millisecond, Batch: 5})
	startRelay(t, b, c, RelayConfig{Interval: 5 * time.Millisecond, Batch: 5})
	eventually(t, 20*time.Second, "all rows sent", func() bool { sent, _, _ := store.state(); return sent == n })
	store.mu.Lock()
	for id, calls := range store.fnCalls {
		if calls != 1 {
			t.Errorf("row %s handed to a publisher %d times", id, calls)
		}
	}
	store.mu.Unlock()
	if a.calls.Load() == 0 || c.calls.Load() == 0 {
		t.Logf("one relay did all the work (a=%d, b=%d); the test still checks no double publish", a.calls.Load(), c.calls.Load())
	}
	if got := a.calls.Load() + c.calls.Load(); got != n {
		t.Errorf("%d publishes for %d rows", got, n)
	}
	got := deliveries(t, b, n)
	if len(got) != n {
		t.Fatalf("%d distinct messages, want %d", len(got), n)
	}
	for id, cnt := range got {
		if cnt != 1 {
			t.Errorf("%s delivered %d times", id, cnt)
		}
	}
}

func TestRelayDeadLettersUnpublishableRows(t *testing.T) {
	b := newTestBus(t)
	store := newMemOutbox()
	big := bytes.Repeat([]byte("x"), 2<<20) // over the default 1 MiB max payload
	store.insert(
		OutboxRow{ID: "big", Subject: b.n.Commits("acme", "s1"), Payload: big},
		OutboxRow{ID: "space", Subject: "t.commits.acme.s 1", Payload: []byte("{}")},
		OutboxRow{ID: "wild", Subject: "t.commits.acme.*", Payload: []byte("{}")},
		OutboxRow{ID: "nostream", Subject: "t.metrics.recall.x", Payload: []byte("{}")},
		OutboxRow{ID: "badaccount", Subject: "t.events.memory_upserted.ACME.s1", Payload: []byte("{}")},
		OutboxRow{ID: "good", Subject: b.n.Commits("acme", "s1"), Payload: []byte(`{"ok":true}`)},
	)
	startRelay(t, b, store, RelayConfig{Interval: 20 * time.Millisecond})
	eventually(t, 10*time.Second, "rows settled", func() bool { sent, dead, _ := store.state(); return sent == 1 && dead == 5 })
	store.mu.Lock()
	for _, r := range store.rows {
		if r.ID != "good" && r.dead == "" {
			t.Errorf("row %s not dead", r.ID)
		}
		if store.fnCalls[r.ID] != 1 {
			t.Errorf("row %s tried %d times; unpublishable rows must not be retried", r.ID, store.fnCalls[r.ID])
		}
	}
	store.mu.Unlock()
	dls, err := ListDLQ(context.Background(), b.js, b.n, b.n.DLQ(StreamOutbox, "*", "*"), 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(dls) != 5 {
		t.Fatalf("%d outbox dead letters, want 5", len(dls))
	}
	for _, dl := range dls {
		if dl.Stream != StreamOutbox || dl.Reason == "" {
			t.Errorf("dead letter %+v", dl.DLQEnvelope)
		}
		if dl.OriginalSubject == b.n.Commits("acme", "s1") && len(dl.PayloadText) != dlqMaxData {
			t.Errorf("oversized payload kept as %d bytes, want truncated to %d", len(dl.PayloadText), dlqMaxData)
		}
	}
}

func TestRelayKickPublishesWithoutWaitingForThePoll(t *testing.T) {
	b := newTestBus(t)
	store := newMemOutbox()
	r := startRelay(t, b, store, RelayConfig{Interval: time.Hour})
	// Rows inserted only after the first (empty) drain: only the kick can publish them now.
	eventually(t, 5*time.Second, "the first drain", func() bool { store.mu.Lock(); defer store.mu.Unlock(); return store.claims > 0 })
	store.insert(outboxRows(b.n, 3)...)
	r.Kick()
	eventually(t, 5*time.Second, "kicked rows sent", func() bool { sent, _, _ := store.state(); return sent == 3 })
}

func TestRelayRetriesWhenTheStreamIsMissing(t *testing.T) {
	b := newTestBus(t)
	if err := b.js.DeleteStream(context.Background(), b.n.Stream(StreamCommits)); err != nil {
		t.Fatal(err)
	}
	store := newMemOutbox()
	store.insert(outboxRows(b.n, 2)...)
	startRelay(t, b, store, RelayConfig{Interval: 20 * time.Millisecond})
	eventually(t, 10*time.Second, "a publish attempt", func() bool { store.mu.Lock(); defer store.mu.Unlock(); return store.fnCalls["row-0"] > 0 })
	if _, dead, _ := store.state(); dead != 0 {
		t.Fatal("row dead-lettered because the stream was not created yet")
	}
	if err := EnsureStreams(context.Background(), b.js, b.n, DefaultStreamLimits()); err != nil {
		t.Fatal(err)
	}
	eventually(t, 15*time.Second, "rows sent once the stream exists", func() bool { sent, _, _ := store.state(); return sent == 2 })
}

// TestRelayPublishesOnlyItsSubjects: a service's relay (RelayConfig.Subjects, ingest's commit
// requests) leaves the rows of other categories to the relays allowed to publish them.
func TestRelayPublishesOnlyItsSubjects(t *testing.T) {
	b := newTestBus(t)
	store := newMemOutbox()
	store.insert(outboxRows(b.n, 5)...) // commit requests
	for i := range 3 {
		id := "event-" + strconv.Itoa(i)
		store.insert(OutboxRow{ID: id, Subject: b.n.Event("memory_upserted", "acme", "s1"), Payload: []byte(`{}`), CreatedAt: time.Now()})
	}
	startRelay(t, b, store, RelayConfig{Interval: 10 * time.Millisecond, Subjects: b.n.OutboxSubjects(ServiceIngest)})
	eventually(t, 10*time.Second, "the commit requests sent", func() bool { sent, _, _ := store.state(); return sent == 5 })
	store.mu.Lock()
	after := store.claims
	store.mu.Unlock()
	// Two more claims have passed the events by.
	eventually(t, 10*time.Second, "two more claims", func() bool { store.mu.Lock(); defer store.mu.Unlock(); return store.claims >= after+2 })
	if sent, dead, unsent := store.state(); sent != 5 || dead != 0 || unsent != 3 {
		t.Fatalf("sent %d, dead %d, unsent %d; want the 5 commit requests sent and the 3 events left", sent, dead, unsent)
	}
}
