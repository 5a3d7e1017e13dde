// Package sessiontest is the conformance suite every session.Store runs: the behaviours
// worth relying on, written once (SQLite, MariaDB, MariaDB + Redis).
package sessiontest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/membus/membus/pkg/session"
	"github.com/membus/membus/pkg/store"
)

// NewFunc builds a fresh session store for one test and returns it with the SQL store under
// it (the suite archives through it, as extract does).
type NewFunc func(t *testing.T) (session.Store, *store.Store)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// Msg is a user message of len(text) tokens.
func Msg(id string, pos int, text string, at time.Time) store.Message {
	return store.Message{MessageID: id, Position: pos, Role: "user", Content: text, Parts: json.RawMessage(`[]`), Tokens: len(text), CreatedAt: at}
}

// Turn is one event's messages for (account, session).
func Turn(account, session, event string, streamSeq uint64, ms ...store.Message) store.Turn {
	return store.Turn{AccountID: account, UserID: "u1", SessionID: session, EventID: event, StreamSeq: streamSeq, Messages: ms}
}

// Run runs the suite.
func Run(t *testing.T, newStore NewFunc) {
	tests := []struct {
		name string
		fn   func(t *testing.T, ss session.Store, st *store.Store)
	}{
		{"the same event thrice and out of order gives one history in (created_at, position) order", sameHistory},
		{"seq is assigned per session", seqPerSession},
		{"two accounts with the same session id never meet", accountsNeverMeet},
		{"Active returns the newest limit by seq in history order", activeLimit},
		{"Window fits budget minus reserve, newest first, returned oldest first", window},
		{"Meta counts follow every write", metaCounts},
		{"a read after a write sees the write", readYourWrites},
		{"Invalidate after an archive hides the archived messages", archiveHides},
		{"the newest 200 are cached and more are still read", overCap},
		{"an unknown session has no messages and no meta", unknownSession},
		{"SeenRecently never claims an unapplied message", seenRecently},
		{"racing writers and readers end on the SQL truth", racing},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ss, st := newStore(t)
			tc.fn(t, ss, st)
		})
	}
}

func apply(t *testing.T, ss session.Store, turns ...store.Turn) []store.ApplyResult {
	t.Helper()
	res, err := ss.ApplyTurns(context.Background(), nil, turns)
	if err != nil {
		t.Fatalf("ApplyTurns: %v", err)
	}
	return res
}

func active(t *testing.T, ss session.Store, account, sess string, limit int) []store.Message {
	t.Helper()
	ms, err := ss.Active(context.Background(), account, sess, limit)
	if err != nil {
		t.Fatalf("Active: %v", err)
	}
	return ms
}

func ids(ms []store.Message) string {
	var out []string
	for _, m := range ms {
		out = append(out, m.MessageID)
	}
	return strings.Join(out, " ")
}

func seqs(ms []store.Message) string {
	var out []string
	for _, m := range ms {
		out = append(out, fmt.Sprint(m.Seq))
	}
	return strings.Join(out, " ")
}

func sameHistory(t *testing.T, ss session.Store, _ *store.Store) {
	ev1 := Turn("acme", "s1", "e1", 1, Msg("m1", 0, "hello", t0), Msg("m2", 1, "world", t0))
	ev2 := Turn("acme", "s1", "e2", 2, Msg("m0", 0, "older", t0.Add(-time.Minute)))
	stored, dups := 0, 0
	for _, batch := range [][]store.Turn{{ev2, ev1}, {ev1}, {ev1, ev2}} {
		for _, r := range apply(t, ss, batch...) {
			stored += r.Stored
			dups += r.Duplicates
		}
		active(t, ss, "acme", "s1", 0) // a cached store caches between the deliveries
	}
	if stored != 3 || dups != 5 {
		t.Fatalf("stored %d, duplicates %d; want 3 and 5", stored, dups)
	}
	ms := active(t, ss, "acme", "s1", 0)
	if got := ids(ms); got != "m0 m1 m2" {
		t.Fatalf("history = %q, want %q by (created_at, position)", got, "m0 m1 m2")
	}
	if ms[0].Content != "older" || ms[0].AccountID != "acme" || ms[0].SessionID != "s1" || !ms[0].CreatedAt.Equal(t0.Add(-time.Minute)) || string(ms[0].Parts) != "[]" {
		t.Fatalf("message read back altered: %+v", ms[0])
	}
}

func seqPerSession(t *testing.T, ss session.Store, _ *store.Store) {
	for i := range 3 {
		apply(t, ss,
			Turn("acme", "a", fmt.Sprint("ea", i), uint64(2*i+1), Msg(fmt.Sprint("a", i), 0, "x", t0.Add(time.Duration(i)*time.Second))),
			Turn("acme", "b", fmt.Sprint("eb", i), uint64(2*i+2), Msg(fmt.Sprint("b", i), 0, "y", t0.Add(time.Duration(i)*time.Second))))
	}
	for _, s := range []string{"a", "b"} {
		if got := seqs(active(t, ss, "acme", s, 0)); got != "1 2 3" {
			t.Fatalf("session %s seqs = %q, want 1 2 3", s, got)
		}
	}
}

func accountsNeverMeet(t *testing.T, ss session.Store, _ *store.Store) {
	apply(t, ss, Turn("acme", "s1", "e1", 1, Msg("m1", 0, "mine", t0)))
	active(t, ss, "acme", "s1", 0)
	apply(t, ss, Turn("other", "s1", "e1", 2, Msg("m1", 0, "secret", t0), Msg("m2", 1, "more", t0)))
	if ms := active(t, ss, "acme", "s1", 0); ids(ms) != "m1" || ms[0].Content != "mine" {
		t.Fatalf("acme sees %v", ms)
	}
	if ms := active(t, ss, "other", "s1", 0); ids(ms) != "m1 m2" || ms[0].Content != "secret" {
		t.Fatalf("other sees %v", ms)
	}
	a, err := ss.Meta(context.Background(), "acme", "s1")
	if err != nil || a.MessageCount != 1 {
		t.Fatalf("acme meta = %+v, %v; want 1 message", a, err)
	}
}

func activeLimit(t *testing.T, ss session.Store, _ *store.Store) {
	// Five messages stored in seq order m1…m5, but m4 was created first.
	created := []time.Duration{1, 2, 3, 0, 4}
	for i, d := range created {
		apply(t, ss, Turn("acme", "s1", fmt.Sprint("e", i), uint64(i+1), Msg(fmt.Sprint("m", i+1), 0, "t", t0.Add(d*time.Second))))
	}
	tests := []struct {
		limit int
		want  string
	}{
		{0, "m4 m1 m2 m3 m5"},
		{2, "m4 m5"},
		{3, "m4 m3 m5"},
		{10, "m4 m1 m2 m3 m5"},
	}
	for _, tc := range tests {
		for range 2 { // a miss, then a hit
			if got := ids(active(t, ss, "acme", "s1", tc.limit)); got != tc.want {
				t.Fatalf("Active(limit %d) = %q, want %q", tc.limit, got, tc.want)
			}
		}
	}
}

func window(t *testing.T, ss session.Store, _ *store.Store) {
	for i := range 5 { // 10 tokens each, 14 with the overhead
		apply(t, ss, Turn("acme", "s1", fmt.Sprint("e", i), uint64(i+1), Msg(fmt.Sprint("m", i+1), 0, "0123456789", t0.Add(time.Duration(i)*time.Second))))
	}
	tests := []struct {
		name            string
		budget, reserve int
		want            string
		used            int
	}{
		{"three fit", 3*14 + 5, 0, "m3 m4 m5", 42},
		{"reserve takes room", 3*14 + 5, 14, "m4 m5", 28},
		{"negative reserve is the 2000 default", 2000 + 14, -1, "m5", 14},
		{"all fit", 1000, 0, "m1 m2 m3 m4 m5", 70},
		{"nothing fits", 13, 0, "", 0},
	}
	for _, tc := range tests {
		for range 2 {
			ms, used, err := ss.Window(context.Background(), "acme", "s1", tc.budget, tc.reserve)
			if err != nil {
				t.Fatal(err)
			}
			if ids(ms) != tc.want || used != tc.used {
				t.Fatalf("%s: Window = %q (%d tokens), want %q (%d)", tc.name, ids(ms), used, tc.want, tc.used)
			}
		}
	}
}

func metaCounts(t *testing.T, ss session.Store, _ *store.Store) {
	ctx := context.Background()
	for i := range 4 {
		apply(t, ss, Turn("acme", "s1", fmt.Sprint("e", i), uint64(10+i), Msg(fmt.Sprint("m", i), 0, "abcd", t0), Msg(fmt.Sprint("m", i), 0, "abcd", t0)))
		m, err := ss.Meta(ctx, "acme", "s1")
		if err != nil {
			t.Fatal(err)
		}
		n := int64(i + 1)
		if m.MessageCount != n || m.NextSeq != n+1 || m.PendingTokens != 4*n || m.AppliedTurnsSeq != int64(10+i) || m.UserID != "u1" {
			t.Fatalf("after %d writes meta = count %d next %d pending %d applied %d user %q", n, m.MessageCount, m.NextSeq, m.PendingTokens, m.AppliedTurnsSeq, m.UserID)
		}
	}
}

func readYourWrites(t *testing.T, ss session.Store, _ *store.Store) {
	for i := range 30 {
		apply(t, ss, Turn("acme", "s1", fmt.Sprint("e", i), uint64(i+1), Msg(fmt.Sprint("m", i), 0, "x", t0.Add(time.Duration(i)*time.Second))))
		if got := len(active(t, ss, "acme", "s1", 0)); got != i+1 {
			t.Fatalf("after write %d Active has %d messages", i+1, got)
		}
		if ms, _, _ := ss.Window(context.Background(), "acme", "s1", 10000, 0); len(ms) != i+1 {
			t.Fatalf("after write %d Window has %d messages", i+1, len(ms))
		}
	}
}

// Archive archives seqs from…to of a session as extract does and invalidates its cache.
func Archive(t *testing.T, ss session.Store, st *store.Store, account, sess string, from, to int64) {
	t.Helper()
	ctx := context.Background()
	epoch, err := st.AcquireEpoch(ctx, account, sess)
	if err != nil {
		t.Fatal(err)
	}
	a := store.Archive{ID: fmt.Sprintf("arch-%s-%d-%d", sess, from, to), AccountID: account, SessionID: sess, UserID: "u1",
		FromSeq: from, ToSeq: to, Kind: "auto", State: store.StateArchived}
	if err := st.CreateArchive(ctx, epoch, a, nil); err != nil {
		t.Fatal(err)
	}
	if err := ss.Invalidate(ctx, account, sess); err != nil {
		t.Fatal(err)
	}
}

func archiveHides(t *testing.T, ss session.Store, st *store.Store) {
	for i := range 6 {
		apply(t, ss, Turn("acme", "s1", fmt.Sprint("e", i), uint64(i+1), Msg(fmt.Sprint("m", i+1), 0, "0123456789", t0.Add(time.Duration(i)*time.Second))))
	}
	active(t, ss, "acme", "s1", 0)
	if _, err := ss.Meta(context.Background(), "acme", "s1"); err != nil {
		t.Fatal(err)
	}
	Archive(t, ss, st, "acme", "s1", 1, 4)
	if got := ids(active(t, ss, "acme", "s1", 0)); got != "m5 m6" {
		t.Fatalf("after archiving 1–4 Active = %q, want m5 m6", got)
	}
	if ms, _, _ := ss.Window(context.Background(), "acme", "s1", 10000, 0); ids(ms) != "m5 m6" {
		t.Fatalf("after archiving 1–4 Window = %q, want m5 m6", ids(ms))
	}
	m, err := ss.Meta(context.Background(), "acme", "s1")
	if err != nil || m.ArchivedUpto != 4 || m.PendingTokens != 20 {
		t.Fatalf("meta after archive = %+v, %v; want archived_upto 4, pending 20", m, err)
	}
	apply(t, ss, Turn("acme", "s1", "e7", 7, Msg("m7", 0, "x", t0.Add(time.Hour))))
	if got := ids(active(t, ss, "acme", "s1", 0)); got != "m5 m6 m7" {
		t.Fatalf("after a new message Active = %q, want m5 m6 m7", got)
	}
}

func overCap(t *testing.T, ss session.Store, st *store.Store) {
	const total = session.HotMessages + 50
	var batch []store.Turn
	for i := range total {
		batch = append(batch, Turn("acme", "s1", fmt.Sprint("e", i), uint64(i+1), Msg(fmt.Sprintf("m%03d", i+1), 0, "0123456789", t0.Add(time.Duration(i)*time.Second))))
		if len(batch) == 50 {
			apply(t, ss, batch...)
			batch = nil
			active(t, ss, "acme", "s1", 5)
		}
	}
	check := func(limit, want int, first string) {
		t.Helper()
		for range 2 {
			ms := active(t, ss, "acme", "s1", limit)
			if len(ms) != want || ms[0].MessageID != first || ms[len(ms)-1].MessageID != fmt.Sprintf("m%03d", total) {
				t.Fatalf("Active(%d) = %d messages from %s, want %d from %s", limit, len(ms), ms[0].MessageID, want, first)
			}
		}
	}
	check(0, total, "m001")
	check(session.HotMessages, session.HotMessages, "m051")
	check(session.HotMessages+1, session.HotMessages+1, "m050")
	check(10, 10, "m241")
	ms, used, err := ss.Window(context.Background(), "acme", "s1", 1_000_000, 0)
	if err != nil || len(ms) != total || used != total*14 {
		t.Fatalf("Window over the cap = %d messages, %d tokens, %v; want %d, %d", len(ms), used, err, total, total*14)
	}
	Archive(t, ss, st, "acme", "s1", 1, 100)
	check(0, total-100, "m101")
}

func unknownSession(t *testing.T, ss session.Store, _ *store.Store) {
	if ms := active(t, ss, "acme", "nope", 0); len(ms) != 0 {
		t.Fatalf("Active of an unknown session = %v", ms)
	}
	if ms, used, err := ss.Window(context.Background(), "acme", "nope", 1000, 0); len(ms) != 0 || used != 0 || err != nil {
		t.Fatalf("Window of an unknown session = %v, %d, %v", ms, used, err)
	}
	if _, err := ss.Meta(context.Background(), "acme", "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Meta of an unknown session: %v, want store.ErrNotFound", err)
	}
}

func seenRecently(t *testing.T, ss session.Store, _ *store.Store) {
	apply(t, ss, Turn("acme", "s1", "e1", 1, Msg("m1", 0, "x", t0)))
	ctx := context.Background()
	for _, c := range [][3]string{{"acme", "s1", "m2"}, {"other", "s1", "m1"}, {"acme", "s2", "m1"}} {
		if ss.SeenRecently(ctx, c[0], c[1], c[2]) {
			t.Fatalf("SeenRecently%v = true for a message never applied", c)
		}
	}
	// After an erasure forgets the keys, no replay is skipped because of them.
	if err := ss.ForgetDedup(ctx, "acme", "s1", []string{"m1"}); err != nil {
		t.Fatalf("ForgetDedup: %v", err)
	}
	if ss.SeenRecently(ctx, "acme", "s1", "m1") {
		t.Fatal("SeenRecently true after ForgetDedup")
	}
}

func racing(t *testing.T, ss session.Store, _ *store.Store) {
	const writers, each = 4, 15
	ctx, cancel := context.WithCancel(context.Background())
	var wg, readers sync.WaitGroup
	for r := range 2 {
		readers.Add(1)
		go func() {
			defer readers.Done()
			for ctx.Err() == nil {
				if r == 0 {
					_, _ = ss.Active(ctx, "acme", "s1", 0)
				} else {
					_, _ = ss.Meta(ctx, "acme", "s1")
				}
			}
		}()
	}
	errs := make(chan error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				id := fmt.Sprintf("w%d-%02d", w, i)
				if _, err := ss.ApplyTurns(context.Background(), nil, []store.Turn{Turn("acme", "s1", id, 1, Msg(id, 0, "x", t0))}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	cancel()
	readers.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if got := len(active(t, ss, "acme", "s1", 0)); got != writers*each {
		t.Fatalf("after racing writes Active has %d messages, want %d", got, writers*each)
	}
	m, err := ss.Meta(context.Background(), "acme", "s1")
	if err != nil || m.MessageCount != writers*each {
		t.Fatalf("after racing writes Meta = %+v, %v", m, err)
	}
}
