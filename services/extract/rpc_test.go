package extract

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/membus/membus/pkg/bus"
	"github.com/membus/membus/pkg/contract"
	"github.com/membus/membus/pkg/store"
	"github.com/nats-io/nats.go/jetstream"
)

func TestCaughtUp(t *testing.T) {
	cases := []struct {
		name                   string
		first, newest, applied uint64
		want                   bool
	}{
		{"the first queued event came after the call: caught up", 8, 7, 0, true},
		{"the newest event is the only one queued and SQL has it: caught up", 7, 7, 7, true},
		{"SQL records a later event, the newest queued one may be unapplied: wait", 7, 7, 9, false},
		{"the newest event is queued and not applied: wait", 7, 7, 6, false},
		{"a heartbeat (never recorded in SQL) is queued: wait for its removal", 7, 7, 0, false},
		{"an earlier event is still queued though the newest is applied: wait", 5, 7, 7, false},
		{"an earlier event is queued, SQL is behind: wait", 5, 7, 4, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := caughtUp(c.first, c.newest, c.applied); got != c.want {
				t.Fatalf("caughtUp(first %d, newest %d, applied %d) = %v, want %v", c.first, c.newest, c.applied, got, c.want)
			}
		})
	}
}

// A turn event ingest has stored (its stream sequence recorded in the session's row in the
// same transaction) ends the wait while it is still in the work queue, before ingest's ack has
// removed it.
func TestWaitIngestedEndsWhenSQLHasTheQueuedTurn(t *testing.T) {
	e := newEnv(t)
	ack, err := bus.PublishJSON(e.ctx, e.js, e.names.Turns(acct, "s1"), "turn-1", contract.TurnEvent{V: contract.Version, EventID: "turn-1"})
	if err != nil {
		t.Fatal(err)
	}
	turn := store.Turn{AccountID: acct, UserID: "alice", AgentID: "main", SessionID: "s1", EventID: "turn-1", StreamSeq: ack.Sequence,
		Messages: []store.Message{{MessageID: "m1", Role: contract.RoleUser, Content: "hello", Parts: json.RawMessage(`[]`), Tokens: 1, CreatedAt: time.Now()}}}
	if _, err := e.st.ApplyTurns(e.ctx, nil, []store.Turn{turn}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(e.ctx, 10*time.Second)
	defer cancel()
	if err := e.svc.waitIngested(ctx, acct, "s1"); err != nil {
		t.Fatalf("waitIngested: %v, want nil: SQL holds the queued turn", err)
	}
	stream, err := e.js.Stream(e.ctx, e.names.Stream(bus.StreamTurns))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stream.GetMsg(e.ctx, ack.Sequence); err != nil {
		t.Fatalf("the turn is not queued (%v): the test must show the wait ending before its removal", err)
	}
}

// A turn the ingest consumer has acked stays in the work queue when the embedded server is
// killed -9 after persisting the ack but before the stream's delete (chaos, 2026-12-03: one
// session's every commit then timed out). No one delivers it again; the wait passes over it.
func TestWaitIngestedPassesOverAnAckedTurnLeftInTheQueue(t *testing.T) {
	e := newEnv(t)
	stream, turns := queueTurns(t, e, "turn-1", "turn-2")
	// Both stored; turn 2 removed, turn 1 left behind with the consumer's ack floor past it.
	if _, err := e.st.ApplyTurns(e.ctx, nil, turns); err != nil {
		t.Fatal(err)
	}
	if err := stream.DeleteMsg(e.ctx, turns[1].StreamSeq); err != nil {
		t.Fatal(err)
	}
	wait := func() error {
		ctx, cancel := context.WithTimeout(e.ctx, 300*time.Millisecond)
		defer cancel()
		return e.svc.waitIngested(ctx, acct, "s1")
	}
	if err := wait(); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("waitIngested = %v with turn 1 queued and no consumer past it, want the wait to go on", err)
	}
	// A work queue takes only a deliver-all consumer, so the floor past turn 1 is given here;
	// TestIngestAckFloor reads a real one.
	subject := e.names.Turns(acct, "s1")
	for _, c := range []struct {
		floor uint64
		want  error
	}{{0, nil}, {turns[0].StreamSeq, jetstream.ErrMsgNotFound}} {
		first, err := firstQueued(e.ctx, stream, subject, turns[1].StreamSeq, func() uint64 { return c.floor })
		if !errors.Is(err, c.want) || (err == nil && first != turns[0].StreamSeq) {
			t.Fatalf("firstQueued with ack floor %d = %d, %v; want turn 1's sequence %d or %v", c.floor, first, err, turns[0].StreamSeq, c.want)
		}
	}
}

// TestIngestAckFloor: the floor is the ingest consumer's, 0 before it exists.
func TestIngestAckFloor(t *testing.T) {
	e := newEnv(t)
	if got := e.svc.ingestAckFloor(e.ctx); got != 0 {
		t.Fatalf("ack floor with no consumer = %d, want 0", got)
	}
	ack, err := bus.PublishJSON(e.ctx, e.js, e.names.Turns(acct, "s1"), "turn-1", contract.TurnEvent{V: contract.Version, EventID: "turn-1"})
	if err != nil {
		t.Fatal(err)
	}
	cons, err := e.js.CreateOrUpdateConsumer(e.ctx, e.names.Stream(bus.StreamTurns), jetstream.ConsumerConfig{
		Durable: e.names.Consumer("ingest"), AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := cons.Fetch(1, jetstream.FetchMaxWait(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	for m := range msgs.Messages() {
		if err := m.DoubleAck(e.ctx); err != nil {
			t.Fatal(err)
		}
	}
	if got := e.svc.ingestAckFloor(e.ctx); got != ack.Sequence {
		t.Fatalf("ack floor after acking turn 1 = %d, want %d", got, ack.Sequence)
	}
}

// Ingest's workers store a session's events out of stream order: a later event can be stored
// and removed from the work queue while an earlier one is still queued and not stored. The
// earlier one is then the last queued event of the session, and the session row records the
// later one's stream sequence, past it: that must not end the wait (issue 19: the sync commit
// of a LoCoMo session now and then archived all but its first turn, which landed after it).
func TestWaitIngestedWaitsForAnEarlierTurnStoredAfterALaterOne(t *testing.T) {
	e := newEnv(t)
	stream, turns := queueTurns(t, e, "turn-1", "turn-2", "turn-3")
	// One worker stores and acks turns 2 and 3; turn 1, fetched by the other, is not stored yet.
	if _, err := e.st.ApplyTurns(e.ctx, nil, turns[1:]); err != nil {
		t.Fatal(err)
	}
	for _, tr := range turns[1:] {
		if err := stream.DeleteMsg(e.ctx, tr.StreamSeq); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(e.ctx, 300*time.Millisecond)
	defer cancel()
	if err := e.svc.waitIngested(ctx, acct, "s1"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("waitIngested = %v while turn 1 is queued and not stored, want the wait to go on until the deadline", err)
	}
	// Stored but not yet removed: the row records turn 3, which says nothing of turn 1, so the
	// wait goes on until the ack removes it.
	if _, err := e.st.ApplyTurns(e.ctx, nil, turns[:1]); err != nil {
		t.Fatal(err)
	}
	ctx, cancel = context.WithTimeout(e.ctx, 300*time.Millisecond)
	defer cancel()
	if err := e.svc.waitIngested(ctx, acct, "s1"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("waitIngested = %v with turn 1 queued, want the wait to go on until its removal", err)
	}
	removed := make(chan error, 1)
	ctx, cancel = context.WithTimeout(e.ctx, 10*time.Second)
	defer cancel()
	go func() { removed <- e.svc.waitIngested(ctx, acct, "s1") }()
	time.Sleep(20 * time.Millisecond)
	if err := stream.DeleteMsg(e.ctx, turns[0].StreamSeq); err != nil {
		t.Fatal(err)
	}
	if err := <-removed; err != nil {
		t.Fatalf("waitIngested = %v once turn 1 is removed, want nil", err)
	}
	sess, err := e.st.GetSession(e.ctx, acct, "s1")
	if err != nil {
		t.Fatal(err)
	}
	if sess.MessageCount != 3 {
		t.Fatalf("the session holds %d messages when the wait ends, want all 3", sess.MessageCount)
	}
}

func TestCompletionsReachTheirWaitersOnly(t *testing.T) {
	var c completions
	mine := make(chan contract.Event, 1)
	otherAccount := make(chan contract.Event, 1)
	stopMine := c.wait(acct, "s1", "r1", mine)
	defer c.wait("globex", "s1", "r1", otherAccount)()

	c.notify(contract.Event{AccountID: acct, SessionID: "s1", RequestID: "r1", Status: contract.StatusCompleted})
	select {
	case ev := <-mine:
		if ev.Status != contract.StatusCompleted {
			t.Fatalf("waiter got %+v", ev)
		}
	default:
		t.Fatal("the waiter of the request heard nothing")
	}
	if len(otherAccount) != 0 {
		t.Fatal("another account's request with the same id heard the completion")
	}

	stopMine()
	c.notify(contract.Event{AccountID: acct, SessionID: "s1", RequestID: "r1"})
	if len(mine) != 0 {
		t.Fatal("a stopped waiter still hears completions")
	}
	if _, ok := c.waiters[completionKey{acct, "s1", "r1"}]; ok {
		t.Fatal("a stopped waiter's key is kept")
	}
}

// queueTurns publishes one turn event per id to session s1's subject of the TURNS work queue
// and returns the stream with the turns ingest would store for them (not stored yet).
func queueTurns(t *testing.T, e *env, ids ...string) (jetstream.Stream, []store.Turn) {
	t.Helper()
	stream, err := e.js.Stream(e.ctx, e.names.Stream(bus.StreamTurns))
	if err != nil {
		t.Fatal(err)
	}
	var turns []store.Turn
	for i, id := range ids {
		ack, err := bus.PublishJSON(e.ctx, e.js, e.names.Turns(acct, "s1"), id, contract.TurnEvent{V: contract.Version, EventID: id})
		if err != nil {
			t.Fatal(err)
		}
		turns = append(turns, store.Turn{AccountID: acct, UserID: "alice", AgentID: "main", SessionID: "s1", EventID: id, StreamSeq: ack.Sequence,
			Messages: []store.Message{{MessageID: fmt.Sprintf("m%d", i+1), Role: contract.RoleUser, Content: "hello " + id, Parts: json.RawMessage(`[]`), Tokens: 2, CreatedAt: time.Now()}}})
	}
	return stream, turns
}
