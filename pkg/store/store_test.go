package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/membus/membus/pkg/bus"
	"github.com/membus/membus/pkg/store"
	"github.com/membus/membus/pkg/testenv"
)

// backends runs fn against SQLite always and against MariaDB when MEMBUS_TEST_MYSQL_DSN is set
// (always in CI): one suite for both dialects.
func backends(t *testing.T, fn func(t *testing.T, s *store.Store)) {
	t.Run("sqlite", func(t *testing.T) {
		s, err := store.OpenSQLite(context.Background(), filepath.Join(t.TempDir(), "m.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		fn(t, s)
	})
	t.Run("mysql", func(t *testing.T) {
		dsn := testenv.MySQLDSN(t)
		s, err := store.OpenMySQL(context.Background(), dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		fn(t, s)
	})
}

func msg(id string, pos int, text string, at time.Time) store.Message {
	return store.Message{MessageID: id, Position: pos, Role: "user", Content: text, Parts: json.RawMessage(`[]`), Tokens: len(text), CreatedAt: at}
}

func turn(account, session, event string, seq uint64, ms ...store.Message) store.Turn {
	return store.Turn{AccountID: account, UserID: "u1", SessionID: session, EventID: event, StreamSeq: seq, Messages: ms}
}

var names, _ = bus.NewNames("membus")

// thresholdTrigger requests a commit up to the newest seq once a session's unrequested tokens
// reach n: the shape of ingest's trigger, for the store's side of the contract (the entries are
// written in the batch's transaction and commit_requested_upto moves).
func thresholdTrigger(n int) store.Trigger {
	return func(p store.Pending) (int64, []store.OutboxEntry, error) {
		if p.UnrequestedTokens < int64(n) {
			return 0, nil, nil
		}
		id := fmt.Sprintf("commit-%s-%s-%d", p.AccountID, p.SessionID, p.NewestSeq)
		return p.NewestSeq, []store.OutboxEntry{{ID: id, Subject: names.Commits(p.AccountID, p.SessionID), Payload: []byte(`{}`)}}, nil
	}
}

func TestApplyTurns(t *testing.T) {
	backends(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
		ev1 := turn("acme", "s1", "e1", 1, msg("m1", 0, "hello", t0), msg("m2", 1, "world", t0))
		ev2 := turn("acme", "s1", "e2", 2, msg("m0", 0, "older", t0.Add(-time.Minute)))
		// The same event three times, and out of order: same history.
		for _, batch := range [][]store.Turn{{ev2, ev1}, {ev1}, {ev1, ev2}} {
			if _, err := s.ApplyTurns(ctx, thresholdTrigger(1000), batch); err != nil {
				t.Fatal(err)
			}
		}
		h, err := s.History(ctx, "acme", "s1", false)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, m := range h {
			got = append(got, m.MessageID)
		}
		if fmt.Sprint(got) != "[m0 m1 m2]" {
			t.Fatalf("history order = %v, want [m0 m1 m2] by (created_at, position)", got)
		}
		sess, err := s.GetSession(ctx, "acme", "s1")
		if err != nil {
			t.Fatal(err)
		}
		if sess.MessageCount != 3 || sess.NextSeq != 4 || sess.AppliedTurnsSeq != 2 {
			t.Fatalf("session = count %d next %d applied %d, want 3 4 2", sess.MessageCount, sess.NextSeq, sess.AppliedTurnsSeq)
		}
		// Another account with the same session id never meets this one.
		if _, err := s.ApplyTurns(ctx, thresholdTrigger(1000), []store.Turn{turn("other", "s1", "e1", 3, msg("m1", 0, "secret", t0))}); err != nil {
			t.Fatal(err)
		}
		h, _ = s.History(ctx, "acme", "s1", false)
		for _, m := range h {
			if m.Content == "secret" {
				t.Fatal("account other's message appeared in account acme's session")
			}
		}
	})
}

// A session is one user's (docs/design.md §3): a turn of another user of the account that names
// it is not stored (ApplyResult.Foreign; ingest dead-letters it), whatever the batches, and one
// user's erasure never drops another user's turns beside it.
func TestApplyTurnsSessionIsOneUsers(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	as := func(user string, tr store.Turn) store.Turn { tr.UserID = user; return tr }
	alice := func(event string, seq uint64) store.Turn {
		return as("alice", turn("acme", "s1", event, seq, msg("m-"+event, 0, "alice says "+event, t0)))
	}
	bob := func(event string, seq uint64) store.Turn {
		return as("bob", turn("acme", "s1", event, seq, msg("m-"+event, 0, "bob says "+event, t0)))
	}
	cases := []struct {
		name       string
		erased     string // a user erased before the batches
		batches    [][]store.Turn
		want       [][]store.ApplyResult // by batch and turn
		wantHist   []string              // s1's messages
		wantSessOf string                // s1's user
	}{
		{
			name:       "another user's turn in a later batch",
			batches:    [][]store.Turn{{alice("e1", 1)}, {bob("e2", 2)}},
			want:       [][]store.ApplyResult{{{Stored: 1}}, {{Foreign: true}}},
			wantHist:   []string{"m-e1"},
			wantSessOf: "alice",
		},
		{
			name:       "one batch, the owner's turn first",
			batches:    [][]store.Turn{{alice("e1", 1), bob("e2", 2), alice("e3", 3)}},
			want:       [][]store.ApplyResult{{{Stored: 1}, {Foreign: true}, {Stored: 1}}},
			wantHist:   []string{"m-e1", "m-e3"},
			wantSessOf: "alice",
		},
		{
			name:       "one batch on an existing session, the other user's turn first",
			batches:    [][]store.Turn{{alice("e1", 1)}, {bob("e2", 2), alice("e3", 3)}},
			want:       [][]store.ApplyResult{{{Stored: 1}}, {{Foreign: true}, {Stored: 1}}},
			wantHist:   []string{"m-e1", "m-e3"},
			wantSessOf: "alice",
		},
		{
			name:       "an erased user's turn first in a new session's batch",
			erased:     "bob",
			batches:    [][]store.Turn{{bob("e1", 1), alice("e2", 2)}},
			want:       [][]store.ApplyResult{{{Tombstoned: true}, {Stored: 1}}},
			wantHist:   []string{"m-e2"},
			wantSessOf: "alice",
		},
		{
			name:       "the same turn delivered twice, foreign both times",
			batches:    [][]store.Turn{{alice("e1", 1)}, {bob("e2", 2)}, {bob("e2", 2)}},
			want:       [][]store.ApplyResult{{{Stored: 1}}, {{Foreign: true}}, {{Foreign: true}}},
			wantHist:   []string{"m-e1"},
			wantSessOf: "alice",
		},
	}
	backends(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		for ci, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				// Each case in an account of its own: the store is shared by the cases.
				account := fmt.Sprintf("acct-one-user-%d", ci)
				if c.erased != "" {
					if err := s.WriteTombstone(ctx, account, c.erased, ""); err != nil {
						t.Fatal(err)
					}
				}
				for bi, batch := range c.batches {
					batch = slices.Clone(batch)
					for i := range batch {
						batch[i].AccountID = account
					}
					res, err := s.ApplyTurns(ctx, nil, batch)
					if err != nil {
						t.Fatal(err)
					}
					if !slices.Equal(res, c.want[bi]) {
						t.Errorf("batch %d: %+v, want %+v", bi, res, c.want[bi])
					}
				}
				h, err := s.History(ctx, account, "s1", false)
				if err != nil {
					t.Fatal(err)
				}
				var got []string
				for _, m := range h {
					got = append(got, m.MessageID)
				}
				if !slices.Equal(got, c.wantHist) {
					t.Errorf("history = %v, want %v", got, c.wantHist)
				}
				sess, err := s.GetSession(ctx, account, "s1")
				if err != nil {
					t.Fatal(err)
				}
				if sess.UserID != c.wantSessOf || sess.MessageCount != int64(len(c.wantHist)) {
					t.Errorf("session of %q with %d messages, want of %q with %d", sess.UserID, sess.MessageCount, c.wantSessOf, len(c.wantHist))
				}
			})
		}
	})
}

// AppliedTurnsSeq is the highest TURNS stream sequence applied to the session, whatever the
// order the batches come in (ingest's workers store a session's events out of stream order):
// a maximum, not a watermark. It equals a sequence only once that event is applied — what the
// synchronous commit relies on (services/extract waitIngested) — and lies past an earlier
// event still to come when a later one came first.
func TestAppliedTurnsSeqIsTheHighestAppliedNotAWatermark(t *testing.T) {
	cases := []struct {
		name    string
		batches [][]uint64 // stream sequences of the turns of each batch, in apply order
		want    []uint64   // AppliedTurnsSeq after each batch
	}{
		{"in order", [][]uint64{{11}, {12}, {13}}, []uint64{11, 12, 13}},
		{"a later event first: past the earlier one until it comes", [][]uint64{{12, 13}, {11}}, []uint64{13, 13}},
		{"one batch out of order", [][]uint64{{13, 11, 12}}, []uint64{13}},
		{"a redelivered earlier event", [][]uint64{{11}, {12}, {11}}, []uint64{11, 12, 12}},
	}
	backends(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
		if got, err := s.AppliedTurnsSeq(ctx, "acme", "none"); err != nil || got != 0 {
			t.Fatalf("AppliedTurnsSeq of a session that does not exist = %d, %v; want 0", got, err)
		}
		for ci, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				session := fmt.Sprintf("applied-%d", ci)
				for bi, seqs := range c.batches {
					var batch []store.Turn
					for _, q := range seqs {
						id := fmt.Sprintf("e%d", q)
						batch = append(batch, turn("acme", session, id, q, msg("m"+id, 0, "text "+id, t0.Add(time.Duration(q)*time.Second))))
					}
					if _, err := s.ApplyTurns(ctx, nil, batch); err != nil {
						t.Fatal(err)
					}
					got, err := s.AppliedTurnsSeq(ctx, "acme", session)
					if err != nil {
						t.Fatal(err)
					}
					if got != c.want[bi] {
						t.Fatalf("after batch %d %v: AppliedTurnsSeq = %d, want %d", bi, seqs, got, c.want[bi])
					}
				}
			})
		}
	})
}

// TestArchiveMessagesInHistoryOrder: a session's turns stored out of the order they were said
// in (ingest's workers may store a later turn first) have seqs in storage order; an archive's
// messages come back in the order they were said — created_at, then position within a turn.
func TestArchiveMessagesInHistoryOrder(t *testing.T) {
	backends(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
		said := func(i int) time.Time { return t0.Add(time.Duration(i) * time.Second) }
		// Said in the order a1, a2 (one turn, two positions), b, c; stored c, then a, then b.
		for _, batch := range [][]store.Turn{
			{turn("acme", "s1", "ec", 3, msg("c", 0, "third", said(3)))},
			{turn("acme", "s1", "ea", 1, msg("a1", 0, "first", said(1)), msg("a2", 1, "first reply", said(1)))},
			{turn("acme", "s1", "eb", 2, msg("b", 0, "second", said(2)))},
		} {
			if _, err := s.ApplyTurns(ctx, nil, batch); err != nil {
				t.Fatal(err)
			}
		}
		ids := func(ms []store.Message) []string {
			var out []string
			for _, m := range ms {
				out = append(out, m.MessageID)
			}
			return out
		}
		bySeq, err := s.MessagesBySeq(ctx, "acme", "s1", 1, 4)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := ids(bySeq), []string{"c", "a1", "a2", "b"}; !slices.Equal(got, want) {
			t.Fatalf("MessagesBySeq = %v, want storage order %v", got, want)
		}
		got, err := s.ArchiveMessages(ctx, store.Archive{AccountID: "acme", SessionID: "s1", FromSeq: 1, ToSeq: 4})
		if err != nil {
			t.Fatal(err)
		}
		if want := []string{"a1", "a2", "b", "c"}; !slices.Equal(ids(got), want) {
			t.Fatalf("ArchiveMessages = %v, want history order %v", ids(got), want)
		}
		part, err := s.ArchiveMessages(ctx, store.Archive{AccountID: "acme", SessionID: "s1", FromSeq: 1, ToSeq: 3})
		if err != nil {
			t.Fatal(err)
		}
		if want := []string{"a1", "a2", "c"}; !slices.Equal(ids(part), want) {
			t.Fatalf("ArchiveMessages of seqs 1-3 = %v, want %v (the range is by seq)", ids(part), want)
		}
	})
}

func TestCommitTriggerIsAnEdge(t *testing.T) {
	backends(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		t0 := time.Now().UTC()
		var commits int
		for i := 0; i < 10; i++ {
			rs, err := s.ApplyTurns(ctx, thresholdTrigger(25), []store.Turn{turn("acme", "s1", fmt.Sprint("e", i), uint64(i+1), msg(fmt.Sprint("m", i), 0, "0123456789", t0))})
			if err != nil {
				t.Fatal(err)
			}
			if rs[0].CommitUpto > 0 {
				commits++
			}
		}
		// 10 tokens a message, threshold 25: crossings after messages 3, 6, 9.
		if commits != 3 {
			t.Fatalf("commit requests = %d, want 3 (one per crossing)", commits)
		}
		n, err := s.OutboxPending(ctx)
		if err != nil || n != 3 {
			t.Fatalf("outbox pending = %d, %v; want 3", n, err)
		}
	})
}

func TestArchiveFencing(t *testing.T) {
	backends(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		t0 := time.Now().UTC()
		if _, err := s.ApplyTurns(ctx, nil, []store.Turn{turn("acme", "s1", "e1", 1, msg("m1", 0, "a", t0), msg("m2", 1, "b", t0))}); err != nil {
			t.Fatal(err)
		}
		old, err := s.AcquireEpoch(ctx, "acme", "s1")
		if err != nil {
			t.Fatal(err)
		}
		mine, err := s.AcquireEpoch(ctx, "acme", "s1")
		if err != nil {
			t.Fatal(err)
		}
		a := store.Archive{ID: "00000000-0000-0000-0000-000000000001", AccountID: "acme", SessionID: "s1", UserID: "u1", FromSeq: 1, ToSeq: 2, Kind: "compact", RequestID: "r1"}
		if err := s.CreateArchive(ctx, old, a, nil); !errors.Is(err, store.ErrFenced) {
			t.Fatalf("stale epoch: err = %v, want ErrFenced", err)
		}
		if err := s.CreateArchive(ctx, mine, a, nil); err != nil {
			t.Fatal(err)
		}
		if err := s.CreateArchive(ctx, mine, a, nil); err != nil {
			t.Fatalf("repeat create: %v", err)
		}
		active, _ := s.History(ctx, "acme", "s1", true)
		if len(active) != 0 {
			t.Fatalf("active after archive = %d, want 0", len(active))
		}
		mem := store.Memory{ID: "00000000-0000-0000-0000-0000000000aa", AccountID: "acme", UserID: "u1", Scope: "user", Category: "fact",
			Value: "x", Abstract: "x", Text: "x", Sources: []store.Source{{SessionID: "s1", MessageID: "m1"}}, ValidFrom: t0, ContentHash: "h"}
		if err := s.SaveMemories(ctx, mine, a, []store.Memory{mem}, nil, nil); err != nil {
			t.Fatal(err)
		}
		// A replay of the extraction writes nothing twice.
		if err := s.SaveMemories(ctx, mine, a, []store.Memory{mem}, nil, nil); err != nil {
			t.Fatal(err)
		}
		ms, err := s.Memories(ctx, store.MemoryFilter{AccountID: "acme", UserID: "u1"})
		if err != nil || len(ms) != 1 {
			t.Fatalf("memories = %d, %v; want 1", len(ms), err)
		}
		counts, _ := s.SessionMemoryCounts(ctx, "acme", "s1")
		if counts["fact"] != 1 {
			t.Fatalf("session memory counts = %v", counts)
		}
		if _, err := s.GetMemory(ctx, "other", "u1", mem.ID); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("foreign account get: %v, want ErrNotFound", err)
		}
	})
}

func TestOutboxClaimNeverSharesARow(t *testing.T) {
	backends(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		t0 := time.Now().UTC()
		// 40 crossings → 40 outbox rows.
		for i := 0; i < 40; i++ {
			if _, err := s.ApplyTurns(ctx, thresholdTrigger(5), []store.Turn{turn("acme", fmt.Sprint("s", i), "e", uint64(i+1), msg("m", 0, "0123456789", t0))}); err != nil {
				t.Fatal(err)
			}
		}
		var mu sync.Mutex
		calls := map[string]int{}
		var wg sync.WaitGroup
		for r := 0; r < 3; r++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					n, err := s.Outbox().Claim(ctx, 4, nil, func(ctx context.Context, row bus.OutboxRow) error {
						mu.Lock()
						calls[row.ID]++
						mu.Unlock()
						time.Sleep(2 * time.Millisecond) // hold the lock like a publish would
						return nil
					})
					if err != nil {
						t.Error(err)
						return
					}
					if n == 0 {
						return
					}
				}
			}()
		}
		wg.Wait()
		var ids []string
		for id, n := range calls {
			if n != 1 {
				t.Errorf("row %s published %d times", id, n)
			}
			ids = append(ids, id)
		}
		sort.Strings(ids)
		if len(ids) != 40 {
			t.Fatalf("published %d rows, want 40", len(ids))
		}
		if n, _ := s.OutboxPending(ctx); n != 0 {
			t.Fatalf("pending after relays = %d", n)
		}
	})
}

func TestKeys(t *testing.T) {
	backends(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		key, k, err := s.CreateKey(ctx, "acme", "alice", store.RoleUser, "dev")
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.LookupKey(ctx, key)
		if err != nil || got.AccountID != "acme" || got.UserID != "alice" {
			t.Fatalf("lookup = %+v, %v", got, err)
		}
		if err := s.RevokeKey(ctx, k.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := s.LookupKey(ctx, key); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("revoked key lookup: %v", err)
		}
		if _, _, err := s.CreateKey(ctx, "acme", "", store.RoleUser, ""); err == nil {
			t.Fatal("user key without user accepted")
		}
	})
}

func TestMigrationsFromManyReplicas(t *testing.T) {
	dsn := testenv.MySQLDSN(t)
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := store.OpenMySQL(context.Background(), dsn)
			if err != nil {
				errs <- err
				return
			}
			s.Close()
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

func TestPendingTokensExcludeTheKeepRecentWindow(t *testing.T) {
	backends(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		t0 := time.Now().UTC()
		for i := 0; i < 15; i++ {
			if _, err := s.ApplyTurns(ctx, nil, []store.Turn{turn("acme", "s1", fmt.Sprint("e", i), uint64(i+1), msg(fmt.Sprint("m", i), 0, "0123456789", t0))}); err != nil {
				t.Fatal(err)
			}
		}
		for _, c := range []struct{ keep, want int64 }{{10, 50}, {0, 150}, {20, 0}} {
			got, err := s.PendingTokens(ctx, "acme", "s1", int(c.keep))
			if err != nil || got != c.want {
				t.Errorf("keep %d: pending = %d, %v; want %d", c.keep, got, err, c.want)
			}
		}
	})
}

// TestApplyTurnsBatch checks what one batch over many sessions stores, statement per table
// as it is: more sessions and messages than one statement takes, duplicates within the batch
// and from an earlier one, an erased user and an erased session beside live ones.
func TestApplyTurnsBatch(t *testing.T) {
	backends(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
		if _, err := s.ApplyTurns(ctx, nil, []store.Turn{turn("acme", "s-0007", "e-old", 1, msg("m-s-0007-a", 0, "seen", t0)),
			turn("acme", "s-erased", "e-before", 2, msg("m-before", 0, "x", t0))}); err != nil {
			t.Fatal(err)
		}
		if err := s.WriteTombstone(ctx, "acme", "gone", ""); err != nil {
			t.Fatal(err)
		}
		if err := s.WriteTombstone(ctx, "acme", "u1", "s-erased"); err != nil {
			t.Fatal(err)
		}
		const sessions = 700 // above the rows of one statement
		var batch []store.Turn
		for i := sessions - 1; i >= 0; i-- { // delivered out of session order
			sess := fmt.Sprintf("s-%04d", i)
			batch = append(batch, turn("acme", sess, "e-a-"+sess, uint64(10+i),
				msg("m-"+sess+"-a", 0, "aaaa", t0), msg("m-"+sess+"-b", 1, "bb", t0)))
		}
		// s-0003's second turn repeats m-…-b and adds c; s-0007 already holds m-s-0007-a.
		batch = append(batch, turn("acme", "s-0003", "e-b", 5000, msg("m-s-0003-b", 1, "bb", t0), msg("m-s-0003-c", 2, "c", t0)))
		gone := turn("acme", "s-gone", "e-gone", 5001, msg("m-gone", 0, "x", t0))
		gone.UserID = "gone"
		batch = append(batch, gone, turn("acme", "s-erased", "e-erased", 5002, msg("m-erased", 0, "x", t0)))
		res, err := s.ApplyTurns(ctx, nil, batch)
		if err != nil {
			t.Fatal(err)
		}
		want := func(i int, r store.ApplyResult) {
			t.Helper()
			if res[i] != r {
				t.Errorf("turn %d (%s): %+v, want %+v", i, batch[i].SessionID, res[i], r)
			}
		}
		want(sessions-1-3, store.ApplyResult{Stored: 2})
		want(sessions-1-7, store.ApplyResult{Stored: 1, Duplicates: 1})
		want(sessions, store.ApplyResult{Stored: 1, Duplicates: 1})
		want(sessions+1, store.ApplyResult{Tombstoned: true})
		want(sessions+2, store.ApplyResult{Tombstoned: true})
		if _, err := s.GetSession(ctx, "acme", "s-gone"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("session of an erased user: %v, want no row", err)
		}
		if h, err := s.History(ctx, "acme", "s-erased", false); err != nil || len(h) != 1 {
			t.Errorf("erased session: %d messages (%v), want the one from before", len(h), err)
		}
		for i := 0; i < sessions; i++ {
			sess := fmt.Sprintf("s-%04d", i)
			wantIDs := "m-" + sess + "-a m-" + sess + "-b"
			switch i {
			case 3:
				wantIDs += " m-s-0003-c"
			}
			h, err := s.MessagesBySeq(ctx, "acme", sess, 1, 100)
			if err != nil {
				t.Fatal(err)
			}
			if i == 7 && (len(h) == 0 || h[0].Content != "seen") {
				t.Errorf("s-0007: first message %+v, want the one stored before", h)
			}
			var got []string
			for k, m := range h {
				if m.Seq != int64(k+1) {
					t.Errorf("%s: message %s has seq %d, want %d", sess, m.MessageID, m.Seq, k+1)
				}
				got = append(got, m.MessageID)
			}
			if g := fmt.Sprint(got); g != "["+wantIDs+"]" {
				t.Errorf("%s: stored %s, want [%s]", sess, g, wantIDs)
			}
			m, err := s.GetSession(ctx, "acme", sess)
			if err != nil {
				t.Fatal(err)
			}
			if m.NextSeq != int64(len(h)+1) || m.MessageCount != int64(len(h)) || m.AppliedTurnsSeq < int64(10+i) {
				t.Errorf("%s: next_seq %d, count %d, applied %d after %d messages", sess, m.NextSeq, m.MessageCount, m.AppliedTurnsSeq, len(h))
			}
		}
		// The same batch again stores nothing.
		res, err = s.ApplyTurns(ctx, nil, batch)
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range res {
			if r.Stored != 0 {
				t.Fatalf("redelivered turn %d stored %d", i, r.Stored)
			}
		}
	})
}

// TestUnrequestedTokensEqualTheSum checks that the tokens the trigger is shown equal the sum
// of the session's unarchived messages after commit_requested_upto, whether the store knew
// them from the session row (a new session; everything before the batch requested) or summed
// them (some requested, some archived, some not).
func TestUnrequestedTokensEqualTheSum(t *testing.T) {
	backends(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
		var fire bool
		var shown []int64
		trig := func(p store.Pending) (int64, []store.OutboxEntry, error) {
			shown = append(shown, p.UnrequestedTokens)
			if !fire {
				return 0, nil, nil
			}
			id := fmt.Sprintf("c-%d", p.NewestSeq)
			return p.NewestSeq, []store.OutboxEntry{{ID: id, Subject: names.Commits(p.AccountID, p.SessionID), Payload: []byte(`{}`)}}, nil
		}
		n := 0
		step := func(name string, fireNow bool, wantShown int64, texts ...string) {
			t.Helper()
			fire = fireNow
			var ms []store.Message
			for _, tx := range texts {
				n++
				ms = append(ms, msg(fmt.Sprintf("m%d", n), n, tx, t0))
			}
			shown = nil
			if _, err := s.ApplyTurns(ctx, trig, []store.Turn{turn("acme", "s1", fmt.Sprintf("e%d", n), uint64(n), ms...)}); err != nil {
				t.Fatal(err)
			}
			if len(shown) != 1 || shown[0] != wantShown {
				t.Errorf("%s: trigger shown %v, want [%d]", name, shown, wantShown)
			}
		}
		step("new session: the batch's tokens", false, 7, "aaaa", "bbb")        // seq 1, 2
		step("nothing requested yet: pending tokens", true, 7+5, "ccccc")       // seq 3, requested up to 3
		step("everything before requested: the batch's tokens", false, 2, "dd") // seq 4
		step("some after the request: summed", false, 2+6, "eeeeee")            // seq 5
		if err := s.CreateArchive(ctx, 0, store.Archive{ID: "a1", AccountID: "acme", SessionID: "s1", UserID: "u1", FromSeq: 1, ToSeq: 4,
			Kind: "auto", RequestID: "c-3"}, nil); err != nil {
			t.Fatal(err)
		}
		step("after an archive reaching past the request: summed", false, 6+1, "f") // seq 6; seq 4 archived
	})
}
