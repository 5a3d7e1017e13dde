package ingest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/membus/membus/pkg/bus"
	"github.com/membus/membus/pkg/contract"
	"github.com/membus/membus/pkg/metrics"
	"github.com/membus/membus/pkg/session"
	"github.com/membus/membus/pkg/store"
	"github.com/membus/membus/pkg/testenv"
	"github.com/membus/membus/services/ingest"
)

// backend opens a fresh store of one SQL dialect for a test.
type backend struct {
	name string
	open func(t *testing.T) *store.Store
}

func backends() []backend {
	return []backend{
		{"sqlite", func(t *testing.T) *store.Store {
			st, err := store.OpenSQLite(context.Background(), filepath.Join(t.TempDir(), "membus.db"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			return st
		}},
		{"mariadb", func(t *testing.T) *store.Store {
			return openMySQL(t, testenv.MySQLDSN(t))
		}},
	}
}

func openMySQL(t *testing.T, dsn string) *store.Store {
	t.Helper()
	st, err := store.OpenMySQL(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// forEachBackend runs fn as a subtest per SQL backend (MariaDB skips outside CI when unset).
func forEachBackend(t *testing.T, fn func(t *testing.T, st *store.Store)) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) { fn(t, b.open(t)) })
	}
}

// harness is an in-process JetStream with the membus streams and a store; ingest services
// are started on it with start.
type harness struct {
	t     *testing.T
	nc    *nats.Conn
	js    jetstream.JetStream
	names bus.Names
	st    *store.Store
	m     *metrics.Metrics
	// sessions is what start hands ingest as Deps.Sessions (nil: SQL only).
	sessions session.Store
}

func newHarness(t *testing.T, st *store.Store) *harness {
	t.Helper()
	_, nc := testenv.NATS(t)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	names, _ := bus.NewNames("")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := bus.EnsureStreams(ctx, js, names, bus.DefaultStreamLimits()); err != nil {
		t.Fatal(err)
	}
	return &harness{t: t, nc: nc, js: js, names: names, st: st, m: metrics.New("ingest", "test")}
}

// start runs one ingest replica until the test ends (it drains before the store closes).
func (h *harness) start(cfg ingest.Config) {
	h.t.Helper()
	svc, err := ingest.New(cfg, ingest.Deps{
		JS: h.js, Names: h.names, Store: h.st, Sessions: h.sessions, Metrics: h.m,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		h.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- svc.Run(ctx) }()
	h.t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				h.t.Errorf("ingest Run: %v", err)
			}
		case <-time.After(30 * time.Second):
			h.t.Error("ingest did not drain within 30 s")
		}
	})
}

// publish sends an event to its own subject under msgID (a fresh id per delivery keeps
// JetStream from deduplicating deliberate redeliveries).
func (h *harness) publish(ev contract.TurnEvent, msgID string) {
	h.t.Helper()
	h.publishRaw(h.names.Turns(ev.AccountID, ev.SessionID), msgID, mustJSON(h.t, ev))
}

func (h *harness) publishRaw(subject, msgID string, data []byte) {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := bus.Publish(ctx, h.js, subject, msgID, data, nil); err != nil {
		h.t.Fatal(err)
	}
}

// settled waits until the ingest consumer has settled every published turn: TURNS is a
// work queue, so an acked or terminated message leaves the stream (consumer info alone can
// lag a publish), and nothing awaits an ack.
func (h *harness) settled(timeout time.Duration) {
	h.t.Helper()
	testenv.Eventually(h.t, timeout, 50*time.Millisecond, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if msgs, ackPending := h.turnsState(ctx); msgs != 0 || ackPending != 0 {
			return fmt.Errorf("ingest has not settled: %d turns in the stream, %d awaiting an ack", msgs, ackPending)
		}
		return nil
	})
}

func (h *harness) turnsState(ctx context.Context) (msgs, ackPending uint64) {
	s, err := h.js.Stream(ctx, h.names.Stream(bus.StreamTurns))
	if err != nil {
		return 1, 0
	}
	si, err := s.Info(ctx)
	if err != nil {
		return 1, 0
	}
	cons, err := s.Consumer(ctx, h.names.Consumer("ingest"))
	if err != nil {
		return si.State.Msgs, 0
	}
	ci, err := cons.Info(ctx)
	if err != nil {
		return si.State.Msgs, 1
	}
	return si.State.Msgs, uint64(ci.NumAckPending)
}

// counter reads one counter of the ingest metrics ("ingest_outcomes_total{outcome=\"dlq\"}").
func (h *harness) counter(key string) float64 {
	return h.m.Snapshot(time.Now()).Counters[metrics.Prefix+key]
}

func (h *harness) history(account, session string) []store.Message {
	h.t.Helper()
	msgs, err := h.st.History(context.Background(), account, session, false)
	if err != nil {
		h.t.Fatal(err)
	}
	return msgs
}

func (h *harness) dlq() []bus.DeadLetter {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	letters, err := bus.ListDLQ(ctx, h.js, h.names, "", 1000)
	if err != nil {
		h.t.Fatal(err)
	}
	return letters
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

var baseTime = time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)

// msg is a text message of a turn.
func msg(id string, pos int, role, text string, at time.Time) contract.Message {
	return contract.Message{MessageID: id, Position: pos, Role: role, CreatedAt: at,
		Parts: []contract.Part{{Type: contract.PartText, Text: text}}}
}

// event builds a valid TurnEvent of account acme, user u1.
func event(session, eventID string, msgs ...contract.Message) contract.TurnEvent {
	return contract.TurnEvent{V: 1, EventID: eventID, AccountID: "acme", UserID: "u1", AgentID: "main",
		SessionID: session, Source: "test", Messages: msgs, SentAt: baseTime}
}

func deliveryID(ev contract.TurnEvent, n int) string { return fmt.Sprintf("%s-d%d", ev.EventID, n) }
