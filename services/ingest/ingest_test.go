package ingest_test

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/membus/membus/pkg/bus"
	"github.com/membus/membus/pkg/contract"
	"github.com/membus/membus/pkg/store"
	"github.com/membus/membus/services/ingest"
)

// threeEvents is one conversation of 5 messages in 3 events. The two messages of e2 share a
// timestamp, so only position orders them.
func threeEvents(session string) []contract.TurnEvent {
	at := func(s int) time.Time { return baseTime.Add(time.Duration(s) * time.Second) }
	return []contract.TurnEvent{
		event(session, session+"-e1", msg("m1", 0, "user", "I live in Boston.", at(1)), msg("m2", 1, "assistant", "Noted, Boston.", at(2))),
		event(session, session+"-e2", msg("m3", 0, "user", "I have a dog named Max.", at(3)), msg("m4", 1, "assistant", "Max is a good name.", at(3))),
		event(session, session+"-e3", msg("m5", 0, "user", "I love black coffee.", at(5))),
	}
}

type histLine struct {
	id, role, content string
	pos               int
	at                time.Time
}

func lines(msgs []store.Message) []histLine {
	out := make([]histLine, len(msgs))
	for i, m := range msgs {
		out[i] = histLine{m.MessageID, m.Role, m.Content, m.Position, m.CreatedAt.UTC()}
	}
	return out
}

// TestRedeliveryAndReorderGiveOneHistory: the same events delivered three times and in another
// order store the same history, read back in (created_at, position) order; every duplicate is
// counted and acked, nothing is dead-lettered.
func TestRedeliveryAndReorderGiveOneHistory(t *testing.T) {
	forEachBackend(t, func(t *testing.T, st *store.Store) {
		h := newHarness(t, st)
		h.start(ingest.Defaults())

		inOrder := threeEvents("s-order")
		for _, ev := range inOrder {
			h.publish(ev, deliveryID(ev, 0))
		}
		// e3 first, then every event three times, e1 and e2 interleaved.
		shuffled := threeEvents("s-shuffled")
		e1, e2, e3 := shuffled[0], shuffled[1], shuffled[2]
		for i, ev := range []contract.TurnEvent{e3, e2, e1, e1, e2, e3, e1, e2, e3} {
			h.publish(ev, deliveryID(ev, i))
		}
		h.settled(30 * time.Second)

		want := []string{"m1", "m2", "m3", "m4", "m5"}
		a, b := h.history("acme", "s-order"), h.history("acme", "s-shuffled")
		if len(a) != 5 || len(b) != 5 {
			t.Fatalf("histories hold %d and %d messages, want 5 each", len(a), len(b))
		}
		la, lb := lines(a), lines(b)
		for i := range la {
			if la[i] != lb[i] {
				t.Errorf("history[%d]: in order %+v, reordered and redelivered %+v", i, la[i], lb[i])
			}
			if la[i].id != want[i] {
				t.Errorf("history[%d] = %s, want %s (created_at, position order)", i, la[i].id, want[i])
			}
		}
		// seq is the storage order: unique 1..5 in each session.
		for _, hist := range [][]store.Message{a, b} {
			seen := map[int64]bool{}
			for _, m := range hist {
				if m.Seq < 1 || m.Seq > 5 || seen[m.Seq] {
					t.Errorf("%s: seq %d repeated or out of 1..5", m.MessageID, m.Seq)
				}
				seen[m.Seq] = true
			}
		}
		sess, err := st.GetSession(context.Background(), "acme", "s-shuffled")
		if err != nil {
			t.Fatal(err)
		}
		if sess.MessageCount != 5 || sess.NextSeq != 6 {
			t.Errorf("session message_count %d next_seq %d, want 5 and 6", sess.MessageCount, sess.NextSeq)
		}
		// 9 deliveries of 15 messages for s-shuffled: 5 stored, 10 duplicates.
		if got := h.counter("ingest_messages_duplicate_total"); got != 10 {
			t.Errorf("duplicates counted = %v, want 10", got)
		}
		if got := h.counter("ingest_messages_stored_total"); got != 10 {
			t.Errorf("stored counted = %v, want 10", got)
		}
		if got := h.counter(`ingest_outcomes_total{outcome="ack"}`); got != 12 {
			t.Errorf("acked = %v, want 12 (every delivery)", got)
		}
		if l := h.dlq(); len(l) != 0 {
			t.Errorf("dead letters: %+v", l)
		}
	})
}

// TestBadInputIsDeadLetteredAndTheBatchLands: every kind of bad payload goes to the DLQ with
// a reason, in the same fetched batch as good events that are stored.
func TestBadInputIsDeadLetteredAndTheBatchLands(t *testing.T) {
	good := func(session string) contract.TurnEvent {
		return event(session, session+"-e", msg(session+"-m", 0, "user", "hello from "+session, baseTime))
	}
	mutate := func(f func(*contract.TurnEvent)) []byte {
		ev := good("x")
		f(&ev)
		return mustJSONNoT(ev)
	}
	cases := []struct {
		name    string
		session string // subject token
		data    []byte
		reason  string // a substring of the DLQ reason
	}{
		{"invalid JSON", "bad-json", []byte(`{"v":1,"event_id":`), "decode turn event"},
		{"unknown role", "bad-role", mutate(func(e *contract.TurnEvent) {
			e.SessionID = "bad-role"
			e.Messages[0].Role = "narrator"
		}), "unknown role"},
		{"missing event_id", "bad-eventid", mutate(func(e *contract.TurnEvent) {
			e.SessionID = "bad-eventid"
			e.EventID = ""
		}), "event_id is required"},
		{"account disagrees with subject", "bad-account", mutate(func(e *contract.TurnEvent) {
			e.SessionID = "bad-account"
			e.AccountID = "other"
		}), "disagrees with the subject's account"},
		{"session disagrees with subject", "bad-session", mutate(func(e *contract.TurnEvent) {
			e.SessionID = "someone-elses-session"
		}), "disagrees with the subject's session token"},
		{"message over 256 KiB", "bad-size", mutate(func(e *contract.TurnEvent) {
			e.SessionID = "bad-size"
			e.Messages[0].Parts[0].Text = strings.Repeat("a", contract.MaxMessageBytes+1)
		}), "over the"},
		{"invalid UTF-8", "bad-utf8", []byte(strings.Replace(string(mutate(func(e *contract.TurnEvent) {
			e.SessionID = "bad-utf8"
			e.Messages[0].Parts[0].Text = "caf__"
		})), "caf__", "caf\xff\xfe", 1)), "UTF-8"},
	}
	forEachBackend(t, func(t *testing.T, st *store.Store) {
		h := newHarness(t, st)
		// Everything is published before ingest starts, so it arrives in one batch.
		g1, g2 := good("good-1"), good("good-2")
		h.publish(g1, "g1")
		for _, c := range cases {
			h.publishRaw(h.names.Turns("acme", c.session), "bad-"+c.session, c.data)
		}
		h.publish(g2, "g2")
		h.start(ingest.Defaults())
		h.settled(30 * time.Second)

		for _, s := range []string{"good-1", "good-2"} {
			if got := h.history("acme", s); len(got) != 1 {
				t.Errorf("%s: %d messages stored, want 1", s, len(got))
			}
		}
		letters := map[string]bus.DeadLetter{}
		for _, l := range h.dlq() {
			letters[l.OriginalSubject] = l
		}
		for _, c := range cases {
			subj := h.names.Turns("acme", c.session)
			l, ok := letters[subj]
			if !ok {
				t.Errorf("%s: no dead letter for %s", c.name, subj)
				continue
			}
			if !strings.Contains(l.Reason, c.reason) || l.Stream != bus.StreamTurns || l.Failures < 1 {
				t.Errorf("%s: letter reason %q stream %q failures %d, want a reason containing %q", c.name, l.Reason, l.Stream, l.Failures, c.reason)
			}
			if got := h.history("acme", c.session); len(got) != 0 {
				t.Errorf("%s: %d messages stored", c.name, len(got))
			}
			delete(letters, subj)
		}
		if len(letters) != 0 {
			t.Errorf("unexpected dead letters: %+v", letters)
		}
		// Nothing of the bad session landed under the payload's session either.
		if got := h.history("acme", "someone-elses-session"); len(got) != 0 {
			t.Errorf("mismatched session stored %d messages", len(got))
		}
		if got := h.history("other", "bad-account"); len(got) != 0 {
			t.Errorf("foreign account stored %d messages", len(got))
		}
		if got := h.counter(`ingest_outcomes_total{outcome="dlq"}`); got != float64(len(cases)) {
			t.Errorf("dlq outcomes = %v, want %d", got, len(cases))
		}
	})
}

func mustJSONNoT(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// TestSkips: heartbeats and bypassed sessions store nothing and are acked; a
// pre_prompt_message_count drops the host's earlier positions.
func TestSkips(t *testing.T) {
	forEachBackend(t, func(t *testing.T, st *store.Store) {
		h := newHarness(t, st)
		cfg := ingest.Defaults()
		cfg.BypassSessionPatterns = []string{"cron-*", "probe"}
		h.start(cfg)

		hb := event("s-hb", "hb", msg("hb-m", 0, "user", "ping", baseTime))
		hb.Turn.IsHeartbeat = true
		hbEmpty := event("s-hb", "hb-empty")
		hbEmpty.Turn.IsHeartbeat = true
		cron := event("cron-nightly", "cron", msg("c-m", 0, "user", "nightly job output", baseTime))
		probe := event("probe", "probe", msg("p-m", 0, "user", "probe", baseTime))
		notBypassed := event("cronjob", "cronjob", msg("cj-m", 0, "user", "not matched by cron-*", baseTime))
		two := 2
		pre := event("s-pre", "pre",
			msg("p0", 0, "system", "system prompt", baseTime),
			msg("p1", 1, "user", "old question", baseTime.Add(time.Second)),
			msg("p2", 2, "user", "new question", baseTime.Add(2*time.Second)),
			msg("p3", 3, "assistant", "new answer", baseTime.Add(3*time.Second)))
		pre.Turn.PrePromptMessageCount = &two
		for i, ev := range []contract.TurnEvent{hb, hbEmpty, cron, probe, notBypassed, pre} {
			h.publish(ev, fmt.Sprint("d", i))
		}
		h.settled(30 * time.Second)

		for _, s := range []string{"s-hb", "cron-nightly", "probe"} {
			if got := h.history("acme", s); len(got) != 0 {
				t.Errorf("%s: stored %d messages, want none", s, len(got))
			}
			if _, err := st.GetSession(context.Background(), "acme", s); err == nil {
				t.Errorf("%s: a session row was created", s)
			}
		}
		if got := h.history("acme", "cronjob"); len(got) != 1 {
			t.Errorf("cronjob: stored %d messages, want 1", len(got))
		}
		var ids []string
		for _, m := range h.history("acme", "s-pre") {
			ids = append(ids, m.MessageID)
		}
		if strings.Join(ids, ",") != "p2,p3" {
			t.Errorf("s-pre stored %v, want [p2 p3]", ids)
		}
		if got := h.counter("ingest_events_skipped_total"); got != 4 {
			t.Errorf("skipped = %v, want 4", got)
		}
		if got := h.counter(`ingest_outcomes_total{outcome="ack"}`); got != 6 {
			t.Errorf("acked = %v, want 6", got)
		}
		if l := h.dlq(); len(l) != 0 {
			t.Errorf("dead letters: %+v", l)
		}
	})
}

// TestOneWorkerStoresInStreamOrder: with one fetch loop a session's messages get their seq in
// the order their events stand in the stream, which a client publishing turn by turn makes the
// order they were said (membus eval runs ingest so: its ingests repeat exactly). Two loops
// store whichever batch commits first, so seq is only the storage order (SPEC §5).
func TestOneWorkerStoresInStreamOrder(t *testing.T) {
	forEachBackend(t, func(t *testing.T, st *store.Store) {
		h := newHarness(t, st)
		const n = 240
		for i := range n {
			id := fmt.Sprintf("m%03d", i)
			ev := event("s-stream", "e-"+id, msg(id, 0, "user", "turn "+id, baseTime.Add(time.Duration(i)*time.Second)))
			h.publish(ev, deliveryID(ev, 0))
		}
		cfg := ingest.Defaults()
		cfg.Workers, cfg.Batch = 1, 8 // a backlog of 30 batches
		h.start(cfg)
		h.settled(60 * time.Second)

		msgs := h.history("acme", "s-stream")
		if len(msgs) != n {
			t.Fatalf("%d messages stored, want %d", len(msgs), n)
		}
		slices.SortFunc(msgs, func(a, b store.Message) int { return cmp.Compare(a.Seq, b.Seq) })
		for i, m := range msgs {
			if want := fmt.Sprintf("m%03d", i); m.MessageID != want {
				t.Fatalf("seq %d holds %s, want %s: stored out of the stream's order", m.Seq, m.MessageID, want)
			}
		}
	})
}
