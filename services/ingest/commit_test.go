package ingest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/membus/membus/pkg/bus"
	"github.com/membus/membus/pkg/contract"
	"github.com/membus/membus/pkg/store"
	"github.com/membus/membus/pkg/testenv"
	"github.com/membus/membus/pkg/tokens"
	"github.com/membus/membus/services/ingest"
)

// textOfTokens returns a text of at least n tokens (and not many more).
func textOfTokens(n int) string {
	var b strings.Builder
	for i := 0; tokens.Count(b.String()) < n; i++ {
		fmt.Fprintf(&b, "word%d ", i%7)
	}
	return b.String()
}

// commitRequests reads the outbox's commit requests of a session (no relay runs here, so
// every row stays pending).
func commitRequests(t *testing.T, st *store.Store, session string) []contract.CommitRequest {
	t.Helper()
	rows, err := st.DB().QueryContext(context.Background(), "SELECT payload FROM outbox WHERE subject LIKE ?", "membus.commits.acme."+session)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []contract.CommitRequest
	for rows.Next() {
		var p []byte
		if err := rows.Scan(&p); err != nil {
			t.Fatal(err)
		}
		var r contract.CommitRequest
		if err := json.Unmarshal(p, &r); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Upto < out[j].Upto })
	return out
}

// TestCommitTriggerIsAnEdge: each crossing of the session's threshold queues exactly one
// CommitRequest in the outbox, with two ingest replicas on one consumer and every event
// redelivered; the per-session override from the TurnEvent is clamped to 2000–200000.
func TestCommitTriggerIsAnEdge(t *testing.T) {
	forEachBackend(t, func(t *testing.T, st *store.Store) {
		h := newHarness(t, st)
		h.start(ingest.Defaults()) // default threshold 20000
		h.start(ingest.Defaults()) // a second replica

		// 7 messages of ~700 tokens: with the clamped threshold 2000 the 3rd and the 6th cross.
		text := textOfTokens(700)
		per := tokens.Count(text)
		if per*2 >= 2000 || per*3 < 2000 {
			t.Fatalf("a message of %d tokens does not make the 3rd one cross 2000", per)
		}
		low, high := 500, 10_000_000
		mk := func(session string, i int, th *int) contract.TurnEvent {
			ev := event(session, fmt.Sprintf("%s-e%d", session, i), msg(fmt.Sprintf("m%d", i), 0, "user", text, baseTime.Add(time.Duration(i)*time.Second)))
			ev.Turn.CommitTokenThreshold = th
			return ev
		}
		for i := 1; i <= 7; i++ {
			h.publish(mk("s-low", i, &low), fmt.Sprint("low-", i))
			h.publish(mk("s-default", i, nil), fmt.Sprint("def-", i))
			h.publish(mk("s-high", i, &high), fmt.Sprint("high-", i))
			h.settled(30 * time.Second) // one event at a time: one crossing per batch
		}
		// Every event again, all at once: no new crossing.
		for i := 1; i <= 7; i++ {
			h.publish(mk("s-low", i, &low), fmt.Sprint("low-again-", i))
		}
		h.settled(30 * time.Second)

		reqs := commitRequests(t, st, "s-low")
		if len(reqs) != 2 || reqs[0].Upto != 3 || reqs[1].Upto != 6 {
			t.Fatalf("s-low commit requests = %+v, want exactly two, upto 3 and upto 6", reqs)
		}
		for _, r := range reqs {
			if r.Kind != contract.CommitAuto || r.UserID != "u1" || r.RequestID == "" {
				t.Errorf("request %+v: want kind auto for u1 with an id", r)
			}
		}
		if reqs[0].RequestID == reqs[1].RequestID {
			t.Errorf("two crossings share request id %s", reqs[0].RequestID)
		}
		for _, s := range []string{"s-default", "s-high"} {
			if got := commitRequests(t, st, s); len(got) != 0 {
				t.Errorf("%s: %d commit requests below its threshold", s, len(got))
			}
		}
		if got := h.counter("ingest_commit_requests_total"); got != 2 {
			t.Errorf("commit requests counted = %v, want 2", got)
		}
		n, err := st.OutboxPending(context.Background())
		if err != nil || n != 2 {
			t.Errorf("outbox pending = %d (%v), want 2", n, err)
		}
		ctx := context.Background()
		for session, want := range map[string]*int{"s-low": &[]int{contract.MinCommitTokenThreshold}[0], "s-high": &[]int{contract.MaxCommitTokenThreshold}[0], "s-default": nil} {
			sess, err := st.GetSession(ctx, "acme", session)
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case want == nil && sess.CommitThreshold != nil:
				t.Errorf("%s: threshold override %d recorded, want none", session, *sess.CommitThreshold)
			case want != nil && (sess.CommitThreshold == nil || *sess.CommitThreshold != *want):
				t.Errorf("%s: threshold override %v, want %d (clamped)", session, sess.CommitThreshold, *want)
			}
			if sess.MessageCount != 7 {
				t.Errorf("%s: %d messages, want 7", session, sess.MessageCount)
			}
		}
		if sess, _ := st.GetSession(ctx, "acme", "s-low"); sess.CommitRequestedUpto != 6 {
			t.Errorf("s-low commit_requested_upto = %d, want 6", sess.CommitRequestedUpto)
		}
	})
}

// TestCommitTriggerSeesConcurrentTurns: a turn whose transaction waited for another replica's
// commit on the same session must count that replica's messages toward the threshold. Under
// REPEATABLE READ the SUM over messages read the snapshot taken before the session lock was
// granted and missed the crossing; the store's MySQL transactions are READ COMMITTED.
func TestCommitTriggerSeesConcurrentTurns(t *testing.T) {
	st := openMySQL(t, testenv.MySQLDSN(t))
	names, _ := bus.NewNames("")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	turn := func(i int) store.Turn {
		return store.Turn{AccountID: "acme", UserID: "u1", SessionID: "s-race", EventID: fmt.Sprint("e", i), StreamSeq: uint64(i),
			Messages: []store.Message{{MessageID: fmt.Sprint("m", i), Role: "user", Content: "x", Parts: []byte("[]"), Tokens: 700, CreatedAt: baseTime}}}
	}
	if _, err := st.ApplyTurns(ctx, ingest.CommitTrigger(names, 2000, time.Now), []store.Turn{turn(1)}); err != nil {
		t.Fatal(err)
	}
	// "Replica A" holds the session row while it stores m2.
	tx, err := st.DB().BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, "SELECT next_seq FROM sessions WHERE account_id = 'acme' AND session_id = 's-race' FOR UPDATE"); err != nil {
		t.Fatal(err)
	}
	// "Replica B" applies m3 and waits for the row.
	type out struct {
		res []store.ApplyResult
		err error
	}
	done := make(chan out, 1)
	go func() {
		res, err := st.ApplyTurns(ctx, ingest.CommitTrigger(names, 2000, time.Now), []store.Turn{turn(3)})
		done <- out{res, err}
	}()
	testenv.Eventually(t, 20*time.Second, 20*time.Millisecond, func() error {
		select {
		case o := <-done:
			t.Fatalf("replica B did not wait for the session lock: %+v", o)
		default:
		}
		var waiting int
		if err := st.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE (INFO LIKE '%INSERT IGNORE INTO sessions%' OR INFO LIKE '%FROM sessions%FOR UPDATE%') AND INFO NOT LIKE '%PROCESSLIST%'").Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting == 0 {
			return errors.New("replica B is not waiting for the session lock")
		}
		return nil
	})
	if _, err := tx.ExecContext(ctx, "INSERT INTO messages (account_id, session_id, seq, message_id, event_id, position, role, name, content, parts, tokens, created_us) VALUES ('acme', 's-race', 2, 'm2', 'e2', 0, 'user', '', 'x', '[]', 700, ?)", baseTime.UnixMicro()); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(ctx, "UPDATE sessions SET next_seq = 3, message_count = 2, pending_tokens = 1400 WHERE account_id = 'acme' AND session_id = 's-race'"); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	o := <-done
	if o.err != nil {
		t.Fatal(o.err)
	}
	if o.res[0].CommitUpto != 3 {
		t.Errorf("2100 unrequested tokens after m3 queued a commit upto %d, want one upto 3", o.res[0].CommitUpto)
	}
}
