// Package vectortest is the conformance suite every vector.Store adapter
// runs: the local store, Qdrant, and any fake.
package vectortest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/membus/membus/pkg/vector"
)

// The store under test must be created for vectors of Model and Dim.
const (
	Model = "vectortest-v1-8"
	Dim   = 8
)

// Open returns a store for Model and Dim. It may be shared by the subtests
// (every subtest uses fresh random account ids); Run closes nothing, so the
// opener registers cleanup with t.
type Open func(t *testing.T) vector.Store

// Reopen closes s and opens the same data again.
type Reopen func(t *testing.T, s vector.Store) vector.Store

// Run runs the conformance suite against the stores open returns.
func Run(t *testing.T, open Open) {
	tests := []struct {
		name string
		run  func(t *testing.T, s vector.Store)
	}{
		{"upsert then get returns the point", testUpsertGet},
		{"upsert replaces a point with the same id", testUpsertReplaces},
		{"delete removes only the named ids", testDelete},
		{"two accounts with the same user id never meet", testTenantIsolation},
		{"a call without account or user is refused", testMissingTenant},
		{"filters narrow by agent, scope, kind and category", testFilters},
		{"dense hits are ordered by cosine", testDenseOrdering},
		{"keyword side finds what dense misses", testKeywordOnly},
		{"every hit carries both scores", testBothScores},
		{"vectors of another model are refused", testModelMismatch},
		{"scroll pages through every point once", testScroll},
		{"count covers every user of the account", testCount},
		{"a Scorer scores the tenant's named points, 0 for others", testCosines},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.run(t, open(t))
		})
	}
}

// RunReopen checks that data survives closing and reopening the store, for
// adapters that persist.
func RunReopen(t *testing.T, open Open, reopen Reopen) {
	t.Run("reopen keeps upserts and deletes", func(t *testing.T) {
		ctx := context.Background()
		s := open(t)
		acct, user := newAccount(), "u1"
		a := pt(acct, user, "the user lives in Denver", unit(0))
		b := pt(acct, user, "the user likes tea", unit(1))
		c := pt(acct, user, "temporary", unit(2))
		mustUpsert(t, s, a, b, c)
		if err := s.Delete(ctx, acct, user, []string{c.ID}); err != nil {
			t.Fatal(err)
		}
		b2 := b
		b2.Text = "the user likes green tea"
		mustUpsert(t, s, b2)

		s = reopen(t, s)
		if s.Model() != Model {
			t.Fatalf("model after reopen %q", s.Model())
		}
		got := mustGet(t, s, acct, user, a.ID)
		assertPoint(t, got, a)
		assertPoint(t, mustGet(t, s, acct, user, b.ID), b2)
		if _, err := s.Get(ctx, acct, user, c.ID); !errors.Is(err, vector.ErrNotFound) {
			t.Fatalf("deleted point after reopen: err = %v", err)
		}
		hits := mustSearch(t, s, vector.Filter{AccountID: acct, UserID: user}, nil, "green tea", 5)
		if len(hits) != 1 || hits[0].ID != b.ID {
			t.Fatalf("keyword index after reopen: %v", ids(hits))
		}
	})
}

func newAccount() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "acct-" + hex.EncodeToString(b[:])
}

// unit returns the i-th basis vector; mix returns a normalised blend.
func unit(i int) []float32 {
	v := make([]float32, Dim)
	v[i%Dim] = 1
	return v
}

func mix(weights ...float32) []float32 {
	v := make([]float32, Dim)
	copy(v, weights)
	return v
}

var created = time.Date(2025, 3, 14, 9, 26, 53, 589793000, time.UTC)

func pt(acct, user, text string, vec []float32) vector.Point {
	return vector.Point{
		ID:        uuid.NewString(),
		AccountID: acct,
		UserID:    user,
		Scope:     "user",
		Kind:      "memory",
		Category:  "fact",
		Text:      text,
		Vector:    vec,
		Payload:   map[string]string{"subject": "user"},
		CreatedAt: created,
	}
}

func mustUpsert(t *testing.T, s vector.Store, pts ...vector.Point) {
	t.Helper()
	if err := s.Upsert(context.Background(), Model, pts); err != nil {
		t.Fatalf("upsert: %v", err)
	}
}

func mustGet(t *testing.T, s vector.Store, acct, user, id string) vector.Point {
	t.Helper()
	p, err := s.Get(context.Background(), acct, user, id)
	if err != nil {
		t.Fatalf("get %s: %v", id, err)
	}
	return p
}

func mustSearch(t *testing.T, s vector.Store, f vector.Filter, vec []float32, q string, k int) []vector.Hit {
	t.Helper()
	hits, err := s.Search(context.Background(), f, vec, q, k)
	if err != nil {
		t.Fatalf("search: %v", err)
	}
	return hits
}

func ids(hits []vector.Hit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = h.ID
	}
	return out
}

func assertPoint(t *testing.T, got, want vector.Point) {
	t.Helper()
	if got.ID != want.ID || got.AccountID != want.AccountID || got.UserID != want.UserID ||
		got.AgentID != want.AgentID || got.Scope != want.Scope || got.Kind != want.Kind ||
		got.Category != want.Category || got.Text != want.Text {
		t.Fatalf("point fields differ:\n got %+v\nwant %+v", got, want)
	}
	if !slices.Equal(got.Vector, want.Vector) {
		t.Fatalf("vector differs: got %v want %v", got.Vector, want.Vector)
	}
	if len(got.Payload) != len(want.Payload) {
		t.Fatalf("payload differs: got %v want %v", got.Payload, want.Payload)
	}
	for k, v := range want.Payload {
		if got.Payload[k] != v {
			t.Fatalf("payload[%s] = %q want %q", k, got.Payload[k], v)
		}
	}
	if !got.CreatedAt.Equal(want.CreatedAt) {
		t.Fatalf("created_at %v want %v", got.CreatedAt, want.CreatedAt)
	}
}

func testUpsertGet(t *testing.T, s vector.Store) {
	acct := newAccount()
	p := pt(acct, "u1", "Max is the user's border collie", unit(0))
	p.AgentID = "main"
	mustUpsert(t, s, p)
	assertPoint(t, mustGet(t, s, acct, "u1", p.ID), p)

	_, err := s.Get(context.Background(), acct, "u1", uuid.NewString())
	if !errors.Is(err, vector.ErrNotFound) {
		t.Fatalf("unknown id: err = %v, want ErrNotFound", err)
	}
}

func testUpsertReplaces(t *testing.T, s vector.Store) {
	acct := newAccount()
	p := pt(acct, "u1", "lives in Boston", unit(0))
	mustUpsert(t, s, p)
	p.Text = "lives in Denver"
	p.Vector = unit(1)
	mustUpsert(t, s, p)
	mustUpsert(t, s, p) // replay

	assertPoint(t, mustGet(t, s, acct, "u1", p.ID), p)
	f := vector.Filter{AccountID: acct, UserID: "u1"}
	hits := mustSearch(t, s, f, unit(1), "lives Denver Boston", 10)
	if len(hits) != 1 {
		t.Fatalf("want one hit after replacing, got %d: %v", len(hits), ids(hits))
	}
	if hits := mustSearch(t, s, f, nil, "Boston", 10); len(hits) != 0 {
		t.Fatalf("old text still indexed: %v", ids(hits))
	}
	if n, err := s.Count(context.Background(), acct); err != nil || n != 1 {
		t.Fatalf("count = %d, %v; want 1", n, err)
	}
}

func testDelete(t *testing.T, s vector.Store) {
	ctx := context.Background()
	acct := newAccount()
	a := pt(acct, "u1", "alpha", unit(0))
	b := pt(acct, "u1", "beta", unit(1))
	mustUpsert(t, s, a, b)
	if err := s.Delete(ctx, acct, "u1", []string{a.ID, uuid.NewString()}); err != nil {
		t.Fatalf("delete with an unknown id: %v", err)
	}
	if _, err := s.Get(ctx, acct, "u1", a.ID); !errors.Is(err, vector.ErrNotFound) {
		t.Fatalf("deleted point: err = %v", err)
	}
	mustGet(t, s, acct, "u1", b.ID)
	if hits := mustSearch(t, s, vector.Filter{AccountID: acct, UserID: "u1"}, unit(0), "alpha", 10); slices.Contains(ids(hits), a.ID) {
		t.Fatal("deleted point still searchable")
	}
	if err := s.Delete(ctx, acct, "u1", nil); err != nil {
		t.Fatalf("empty delete: %v", err)
	}
}

func testTenantIsolation(t *testing.T, s vector.Store) {
	ctx := context.Background()
	acctA, acctB := newAccount(), newAccount()
	a := pt(acctA, "alice", "secret plan for the product launch", unit(0))
	b := pt(acctB, "alice", "secret plan for the product launch", unit(0))
	other := pt(acctA, "bob", "secret plan for the product launch", unit(0))
	mustUpsert(t, s, a, b, other)

	for _, tc := range []struct {
		acct, user, own string
	}{{acctA, "alice", a.ID}, {acctB, "alice", b.ID}, {acctA, "bob", other.ID}} {
		hits := mustSearch(t, s, vector.Filter{AccountID: tc.acct, UserID: tc.user}, unit(0), "secret plan", 10)
		if len(hits) != 1 || hits[0].ID != tc.own {
			t.Fatalf("%s/%s sees %v, want only its own %s", tc.acct, tc.user, ids(hits), tc.own)
		}
		page, _, err := s.Scroll(ctx, vector.Filter{AccountID: tc.acct, UserID: tc.user}, "", 10)
		if err != nil || len(page) != 1 || page[0].ID != tc.own {
			t.Fatalf("%s/%s scroll: %v %v", tc.acct, tc.user, page, err)
		}
	}
	if _, err := s.Get(ctx, acctB, "alice", a.ID); !errors.Is(err, vector.ErrNotFound) {
		t.Fatalf("foreign id: err = %v, want ErrNotFound", err)
	}
	if err := s.Delete(ctx, acctB, "alice", []string{a.ID}); err != nil {
		t.Fatal(err)
	}
	mustGet(t, s, acctA, "alice", a.ID) // a foreign delete changed nothing
}

func testMissingTenant(t *testing.T, s vector.Store) {
	ctx := context.Background()
	acct := newAccount()
	cases := []struct {
		name string
		call func() error
	}{
		{"search without account", func() error {
			_, err := s.Search(ctx, vector.Filter{UserID: "u1"}, unit(0), "x", 5)
			return err
		}},
		{"search without user", func() error {
			_, err := s.Search(ctx, vector.Filter{AccountID: acct}, unit(0), "x", 5)
			return err
		}},
		{"scroll without user", func() error {
			_, _, err := s.Scroll(ctx, vector.Filter{AccountID: acct}, "", 5)
			return err
		}},
		{"get without account", func() error {
			_, err := s.Get(ctx, "", "u1", uuid.NewString())
			return err
		}},
		{"delete without user", func() error { return s.Delete(ctx, acct, "", []string{uuid.NewString()}) }},
		{"upsert without user", func() error {
			return s.Upsert(ctx, Model, []vector.Point{pt(acct, "", "x", unit(0))})
		}},
		{"count without account", func() error {
			_, err := s.Count(ctx, "")
			return err
		}},
	}
	for _, c := range cases {
		if err := c.call(); !errors.Is(err, vector.ErrMissingTenant) {
			t.Errorf("%s: err = %v, want ErrMissingTenant", c.name, err)
		}
	}
}

func testFilters(t *testing.T, s vector.Store) {
	acct := newAccount()
	mk := func(agent, scope, kind, cat string) vector.Point {
		p := pt(acct, "u1", "coffee preference note", unit(0))
		p.AgentID, p.Scope, p.Kind, p.Category = agent, scope, kind, cat
		return p
	}
	userPref := mk("", "user", "memory", "preference")
	userFact := mk("", "user", "memory", "fact")
	agentCase := mk("main", "agent", "memory", "case")
	otherAgent := mk("helper", "agent", "memory", "case")
	archive := mk("", "archive", "archive", "")
	digest := mk("", "user", "digest", "digest")
	mustUpsert(t, s, userPref, userFact, agentCase, otherAgent, archive, digest)

	tests := []struct {
		name string
		f    vector.Filter
		want []vector.Point
	}{
		{"no filter matches all", vector.Filter{}, []vector.Point{userPref, userFact, agentCase, otherAgent, archive, digest}},
		{"scope user", vector.Filter{Scopes: []string{"user"}}, []vector.Point{userPref, userFact, digest}},
		{"scopes agent and archive", vector.Filter{Scopes: []string{"agent", "archive"}}, []vector.Point{agentCase, otherAgent, archive}},
		{"kind digest", vector.Filter{Kinds: []string{"digest"}}, []vector.Point{digest}},
		{"category preference", vector.Filter{Categories: []string{"preference"}}, []vector.Point{userPref}},
		{"agent main", vector.Filter{AgentID: "main"}, []vector.Point{agentCase}},
		{"scope and kind together", vector.Filter{Scopes: []string{"user"}, Kinds: []string{"memory"}}, []vector.Point{userPref, userFact}},
		{"nothing matches", vector.Filter{Categories: []string{"task"}}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := tc.f
			f.AccountID, f.UserID = acct, "u1"
			var want []string
			for _, p := range tc.want {
				want = append(want, p.ID)
			}
			slices.Sort(want)

			got := ids(mustSearch(t, s, f, unit(0), "coffee", 20))
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Fatalf("search: got %v want %v", got, want)
			}
			page, _, err := s.Scroll(context.Background(), f, "", 20)
			if err != nil {
				t.Fatal(err)
			}
			got = got[:0]
			for _, p := range page {
				got = append(got, p.ID)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("scroll: got %v want %v", got, want)
			}
		})
	}
}

func testDenseOrdering(t *testing.T, s vector.Store) {
	acct := newAccount()
	best := pt(acct, "u1", "one", mix(1, 0.1))
	second := pt(acct, "u1", "two", mix(1, 1))
	third := pt(acct, "u1", "three", mix(0.2, 1))
	opposite := pt(acct, "u1", "four", mix(-1, 0))
	mustUpsert(t, s, third, opposite, best, second)

	hits := mustSearch(t, s, vector.Filter{AccountID: acct, UserID: "u1"}, unit(0), "", 3)
	want := []string{best.ID, second.ID, third.ID}
	if !slices.Equal(ids(hits), want) {
		t.Fatalf("order %v, want %v", ids(hits), want)
	}
	for i, h := range hits {
		if h.Dense < 0 || h.Dense > 1 {
			t.Fatalf("dense score %v outside [0,1]", h.Dense)
		}
		if i > 0 && h.Dense > hits[i-1].Dense {
			t.Fatalf("scores not descending: %v", hits)
		}
	}
	if hits[0].Dense < 0.99 {
		t.Fatalf("near-identical vector scored %v", hits[0].Dense)
	}
	all := mustSearch(t, s, vector.Filter{AccountID: acct, UserID: "u1"}, unit(0), "", 10)
	for _, h := range all {
		if h.ID == opposite.ID && h.Dense != 0 {
			t.Fatalf("opposite vector scored %v, want clamped to 0", h.Dense)
		}
	}
}

func testKeywordOnly(t *testing.T, s vector.Store) {
	acct := newAccount()
	var pts []vector.Point
	for i := range 5 {
		pts = append(pts, pt(acct, "u1", "general chat about the weather", mix(1, float32(i)*0.01)))
	}
	needle := pt(acct, "u1", "The wifi password for the cabin is hunter2", unit(3))
	pts = append(pts, needle)
	mustUpsert(t, s, pts...)

	hits := mustSearch(t, s, vector.Filter{AccountID: acct, UserID: "u1"}, unit(0), "cabin wifi password", 2)
	var found *vector.Hit
	for i := range hits {
		if hits[i].ID == needle.ID {
			found = &hits[i]
		}
	}
	if found == nil {
		t.Fatalf("keyword match missing from %v", ids(hits))
	}
	if found.Keyword <= 0 {
		t.Fatalf("keyword score %v, want > 0", found.Keyword)
	}
	if len(hits) > 4 {
		t.Fatalf("%d hits, want at most 2k = 4", len(hits))
	}
	if h := mustSearch(t, s, vector.Filter{AccountID: acct, UserID: "u1"}, nil, "hunter2", 5); len(h) != 1 || h[0].ID != needle.ID {
		t.Fatalf("keyword-only search (no vector): %v", ids(h))
	}
	if h := mustSearch(t, s, vector.Filter{AccountID: acct, UserID: "u1"}, nil, "the for is", 5); len(h) != 0 {
		t.Fatalf("stop words alone matched %v", ids(h))
	}
}

func testBothScores(t *testing.T, s vector.Store) {
	acct := newAccount()
	rare := pt(acct, "u1", "zebra crossing near the office", unit(5))
	common := pt(acct, "u1", "office hours", unit(0))
	mustUpsert(t, s, rare, common)
	hits := mustSearch(t, s, vector.Filter{AccountID: acct, UserID: "u1"}, unit(0), "zebra", 1)
	if len(hits) != 2 {
		t.Fatalf("want the dense top-1 and the keyword top-1, got %v", ids(hits))
	}
	for _, h := range hits {
		switch h.ID {
		case common.ID:
			if h.Dense < 0.99 || h.Keyword != 0 {
				t.Fatalf("dense hit scores: %+v", h)
			}
		case rare.ID:
			if h.Dense != 0 || h.Keyword <= 0 {
				t.Fatalf("keyword hit scores: %+v", h)
			}
		}
	}
	if hits[0].ID != common.ID {
		t.Fatalf("hits not ordered by dense score: %v", ids(hits))
	}
}

func testModelMismatch(t *testing.T, s vector.Store) {
	acct := newAccount()
	err := s.Upsert(context.Background(), "some-other-model-8", []vector.Point{pt(acct, "u1", "x", unit(0))})
	if !errors.Is(err, vector.ErrModelMismatch) {
		t.Fatalf("err = %v, want ErrModelMismatch", err)
	}
	if s.Model() != Model {
		t.Fatalf("Model() = %q, want %q", s.Model(), Model)
	}
	if n, _ := s.Count(context.Background(), acct); n != 0 {
		t.Fatalf("refused upsert stored %d points", n)
	}
}

func testScroll(t *testing.T, s vector.Store) {
	ctx := context.Background()
	acct := newAccount()
	want := map[string]bool{}
	var pts []vector.Point
	for i := range 7 {
		p := pt(acct, "u1", "note", unit(i))
		pts = append(pts, p)
		want[p.ID] = true
	}
	mustUpsert(t, s, pts...)
	f := vector.Filter{AccountID: acct, UserID: "u1"}
	seen := map[string]bool{}
	after, pages := "", 0
	for {
		page, next, err := s.Scroll(ctx, f, after, 3)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		if len(page) > 3 {
			t.Fatalf("page of %d, limit 3", len(page))
		}
		for _, p := range page {
			if seen[p.ID] {
				t.Fatalf("%s returned twice", p.ID)
			}
			seen[p.ID] = true
		}
		if next == "" {
			break
		}
		if pages > 10 {
			t.Fatal("scroll does not end")
		}
		after = next
	}
	if len(seen) != len(want) {
		t.Fatalf("scrolled %d points, want %d", len(seen), len(want))
	}
	if pages != 3 {
		t.Fatalf("%d pages for 7 points of limit 3, want 3", pages)
	}
}

func testCount(t *testing.T, s vector.Store) {
	acct := newAccount()
	mustUpsert(t, s, pt(acct, "u1", "a", unit(0)), pt(acct, "u2", "b", unit(1)), pt(newAccount(), "u1", "c", unit(2)))
	n, err := s.Count(context.Background(), acct)
	if err != nil || n != 2 {
		t.Fatalf("count = %d, %v; want 2", n, err)
	}
}

// testCosines checks Scorer (skipped for a store without it): each vector's dense score of
// each named point, in the order named, as Search scores it; a point not found, of another
// user or not a UUID scores 0.
func testCosines(t *testing.T, s vector.Store) {
	sc, ok := s.(vector.Scorer)
	if !ok {
		t.Skipf("%T is not a vector.Scorer", s)
	}
	acct := newAccount()
	near := pt(acct, "u1", "near", mix(1, 0.1))
	far := pt(acct, "u1", "far", mix(0.2, 1))
	opposite := pt(acct, "u1", "opposite", mix(-1, 0))
	foreign := pt(acct, "u2", "foreign", unit(0))
	mustUpsert(t, s, near, far, opposite, foreign)
	missing := uuid.NewString()
	names := []string{far.ID, near.ID, foreign.ID, missing, "not-a-uuid", opposite.ID, near.ID}
	ctx := context.Background()
	got, err := sc.Cosines(ctx, acct, "u1", names, [][]float32{unit(0), unit(1)})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("got %d rows, want one per vector (2)", len(got))
	}
	for j, q := range [][]float32{unit(0), unit(1)} {
		want := map[string]float64{}
		for _, h := range mustSearch(t, s, vector.Filter{AccountID: acct, UserID: "u1"}, q, "", 10) {
			want[h.ID] = h.Dense
		}
		if len(got[j]) != len(names) {
			t.Fatalf("row %d has %d scores, want one per id (%d)", j, len(got[j]), len(names))
		}
		for i, id := range names {
			if d := got[j][i] - want[id]; d > 1e-6 || d < -1e-6 {
				t.Errorf("vector %d, point %d (%s): %v, want %v (Search's)", j, i, id, got[j][i], want[id])
			}
		}
	}
	if got[0][1] < 0.99 || got[0][5] != 0 || got[0][2] != 0 {
		t.Fatalf("near %v (want ≥ 0.99), opposite %v and foreign %v (want 0)", got[0][1], got[0][5], got[0][2])
	}
	if _, err := sc.Cosines(ctx, acct, "", names, [][]float32{unit(0)}); !errors.Is(err, vector.ErrMissingTenant) {
		t.Fatalf("without a user: %v, want ErrMissingTenant", err)
	}
	if _, err := sc.Cosines(ctx, acct, "u1", names, [][]float32{{1, 0}}); !errors.Is(err, vector.ErrInvalid) {
		t.Fatalf("a vector of 2 dimensions: %v, want ErrInvalid", err)
	}
}
