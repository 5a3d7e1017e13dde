package vector_test

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/membus/membus/pkg/embed"
	"github.com/membus/membus/pkg/vector"
	"github.com/membus/membus/pkg/vector/vectortest"
)

// refSearch is Store.Search computed the plain way over every point of the
// partition: exact float64 cosine over all matching points, BM25 with the
// partition's statistics, top k of each side, union ordered by dense,
// keyword, id.
func refSearch(all []vector.Point, f vector.Filter, q []float32, query string, k int) []vector.Hit {
	match := func(p *vector.Point) bool {
		in := func(list []string, v string) bool { return len(list) == 0 || slices.Contains(list, v) }
		return (f.AgentID == "" || p.AgentID == f.AgentID) && in(f.Scopes, p.Scope) && in(f.Kinds, p.Kind) && in(f.Categories, p.Category)
	}
	norm := func(v []float32) float64 {
		var s float64
		for _, x := range v {
			s += float64(x) * float64(x)
		}
		return math.Sqrt(s)
	}
	qn := norm(q)
	dense := func(p *vector.Point) float64 {
		vn := norm(p.Vector)
		if qn == 0 || vn == 0 {
			return 0
		}
		var dot float64
		for i, x := range p.Vector {
			dot += float64(x) * float64(q[i])
		}
		return min(max(dot/(vn*qn), 0), 1)
	}
	// BM25 over the whole partition's statistics; a point without a term is no document.
	n := 0.0
	df := map[string]int{}
	tfs := make([]map[string]int, len(all))
	lens := make([]int, len(all))
	total := 0
	for i, p := range all {
		tfs[i] = map[string]int{}
		for _, t := range vector.Terms(p.Text) {
			tfs[i][t]++
			lens[i]++
		}
		for t := range tfs[i] {
			df[t]++
		}
		if lens[i] > 0 {
			n++
		}
		total += lens[i]
	}
	avg := float64(total) / n
	if avg == 0 {
		avg = 1
	}
	kw := make([]float64, len(all))
	hasKW := make([]bool, len(all))
	seen := map[string]bool{}
	for _, t := range vector.Terms(query) {
		if seen[t] || df[t] == 0 {
			continue
		}
		seen[t] = true
		d := float64(df[t])
		idf := math.Log(1 + (n-d+0.5)/(d+0.5))
		for i := range all {
			if tf := tfs[i][t]; tf > 0 && match(&all[i]) {
				x := float64(tf)
				kw[i] += idf * x * (1.2 + 1) / (x + 1.2*(1-0.75+0.75*float64(lens[i])/avg))
				hasKW[i] = true
			}
		}
	}
	type sc struct {
		i int
		s float64
	}
	top := func(s []sc) []sc {
		slices.SortFunc(s, func(a, b sc) int {
			if c := cmp.Compare(b.s, a.s); c != 0 {
				return c
			}
			return cmp.Compare(all[a.i].ID, all[b.i].ID)
		})
		return s[:min(len(s), k)]
	}
	pick := map[int]bool{}
	if len(q) > 0 {
		var ds []sc
		for i := range all {
			if match(&all[i]) {
				ds = append(ds, sc{i, dense(&all[i])})
			}
		}
		for _, s := range top(ds) {
			pick[s.i] = true
		}
	}
	var ks []sc
	for i := range all {
		if hasKW[i] {
			ks = append(ks, sc{i, kw[i]})
		}
	}
	for _, s := range top(ks) {
		pick[s.i] = true
	}
	hits := []vector.Hit{}
	for i := range pick {
		hits = append(hits, vector.Hit{ID: all[i].ID, Dense: dense(&all[i]), Keyword: kw[i], Point: all[i]})
	}
	slices.SortFunc(hits, func(a, b vector.Hit) int {
		if c := cmp.Compare(b.Dense, a.Dense); c != 0 {
			return c
		}
		if c := cmp.Compare(b.Keyword, a.Keyword); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	return hits
}

var searchWords = strings.Fields("alice bob coffee tea cello guitar denver boston paris tokyo garden kitchen " +
	"python golang rust kafka redis nats monday summer winter dog cat novel chess sister teacher doctor")

func randomPoint(r *rand.Rand, acct, user string, dim int) vector.Point {
	words := make([]string, 3+r.IntN(8))
	for i := range words {
		words[i] = searchWords[r.IntN(len(searchWords))]
	}
	v := make([]float32, dim)
	for i := range v {
		v[i] = float32(r.NormFloat64())
	}
	if r.IntN(10) == 0 { // some points share a vector: exact dense ties
		for i := range v {
			v[i] = float32(i%3) - 1
		}
	}
	p := vector.Point{ID: uuid.NewString(), AccountID: acct, UserID: user, AgentID: []string{"", "a1", "a2"}[r.IntN(3)],
		Scope: []string{"user", "agent", "archive"}[r.IntN(3)], Kind: []string{"memory", "archive"}[r.IntN(2)],
		Category: []string{"fact", "preference", "event"}[r.IntN(3)], Text: strings.Join(words, " "), Vector: v}
	if r.IntN(8) == 0 { // no text, as a session-context point: it takes no part in BM25
		p.Text = ""
	}
	if r.IntN(3) == 0 {
		p.Payload = map[string]string{"seq": fmt.Sprint(r.IntN(100))}
	}
	return p
}

// TestLocalSearchMatchesReference checks the local store's search (segments,
// float32 scan, heaps) against the plain computation, across upserts,
// replacements and deletes, for many filters, and again after a reopen.
func TestLocalSearchMatchesReference(t *testing.T) {
	searchAgainstReference(t, nil, func(t *testing.T, where string, got, want []vector.Hit, _ func(id string) (vector.Hit, bool)) {
		if len(got) != len(want) {
			t.Fatalf("%s: %d hits, want %d", where, len(got), len(want))
		}
		for i := range want {
			g, w := got[i], want[i]
			if g.ID != w.ID || math.Abs(g.Dense-w.Dense) > 1e-12 || math.Abs(g.Keyword-w.Keyword) > 1e-9 {
				t.Fatalf("%s hit %d: got %s %.12f %.9f, want %s %.12f %.9f", where, i, g.ID, g.Dense, g.Keyword, w.ID, w.Dense, w.Keyword)
			}
			if g.Point.Text != w.Point.Text || g.Point.Scope != w.Point.Scope || g.Point.Vector != nil ||
				len(g.Point.Payload) != len(w.Point.Payload) {
				t.Fatalf("%s hit %d: point %+v, want %+v", where, i, g.Point, w.Point)
			}
		}
	})
}

// TestQuantisedSearchRecall runs the same searches with every segment quantised: each hit's
// scores are exact, the keyword side is the reference's, and the hits are the reference's
// but for a few points the codes rank out of the re-scored candidates. Whether the re-scoring
// reads the vectors from memory or from the spill file changes nothing in the hits.
func TestQuantisedSearchRecall(t *testing.T) {
	var results [2][][]vector.Hit
	for v, opts := range [][]vector.LocalOption{
		{vector.WithExactMax(0)},                         // vectors in memory
		{vector.WithExactMax(0), vector.WithSpillMin(0)}, // vectors spilled
	} {
		found, total := 0, 0
		searchAgainstReference(t, opts, func(t *testing.T, where string, got, want []vector.Hit, exact func(id string) (vector.Hit, bool)) {
			results[v] = append(results[v], got)
			for _, g := range got {
				w, ok := exact(g.ID)
				if !ok || math.Abs(g.Dense-w.Dense) > 1e-12 || math.Abs(g.Keyword-w.Keyword) > 1e-9 || g.Point.Vector != nil {
					t.Fatalf("%s: hit %s %.12f %.9f, exactly %+v (found %v)", where, g.ID, g.Dense, g.Keyword, w, ok)
				}
			}
			for _, w := range want {
				total++
				if slices.ContainsFunc(got, func(g vector.Hit) bool { return g.ID == w.ID }) {
					found++
				}
			}
		})
		if r := float64(found) / float64(total); r < 0.98 {
			t.Fatalf("recall %.4f (%d of %d reference hits), want at least 0.98", r, found, total)
		} else {
			t.Logf("recall %.4f (%d of %d reference hits)", r, found, total)
		}
	}
	if len(results[0]) == 0 || !reflect.DeepEqual(results[0], results[1]) {
		t.Fatalf("%d searches with the vectors in memory, %d spilled: the hits differ", len(results[0]), len(results[1]))
	}
}

// searchAgainstReference searches a store opened with opts across upserts, replacements and
// deletes, for many filters, and again after a reopen, and hands each result to check with
// the reference's hits and every matching point's exact scores.
func searchAgainstReference(t *testing.T, opts []vector.LocalOption, check func(t *testing.T, where string, got, want []vector.Hit, exact func(id string) (vector.Hit, bool))) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openLocal(t, dir, opts...)
	r := rand.New(rand.NewPCG(7, 9))
	const acct, user = "acct-ref", "user-ref"
	points := map[string]vector.Point{}
	var order []string
	for round := range 6 {
		var batch []vector.Point
		for range 700 {
			p := randomPoint(r, acct, user, vectortest.Dim)
			p.ID = fmt.Sprintf("%08x-0000-4000-8000-%012x", r.Uint32(), r.Uint64()>>16) // the same points on every run
			if len(order) > 0 && r.IntN(5) == 0 {                                       // replace an existing point
				p.ID = order[r.IntN(len(order))]
			}
			batch = append(batch, p)
		}
		if err := s.Upsert(ctx, vectortest.Model, batch); err != nil {
			t.Fatal(err)
		}
		for _, p := range batch {
			if _, ok := points[p.ID]; !ok {
				order = append(order, p.ID)
			}
			points[p.ID] = p
		}
		var del []string
		for range 150 {
			del = append(del, order[r.IntN(len(order))])
		}
		if err := s.Delete(ctx, acct, user, del); err != nil {
			t.Fatal(err)
		}
		for _, id := range del {
			delete(points, id)
		}
		order = slices.DeleteFunc(order, func(id string) bool { _, ok := points[id]; return !ok })
		if round == 3 {
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			s = openLocal(t, dir, opts...)
		}
		all := make([]vector.Point, 0, len(points))
		for _, id := range order {
			all = append(all, points[id])
		}
		filters := []vector.Filter{
			{},
			{Scopes: []string{"user"}},
			{Scopes: []string{"agent"}, AgentID: "a1"},
			{Scopes: []string{"user", "archive"}, Kinds: []string{"memory"}},
			{Categories: []string{"preference"}},
		}
		for qi := range 8 {
			q := randomPoint(r, acct, user, vectortest.Dim)
			f := filters[qi%len(filters)]
			f.AccountID, f.UserID = acct, user
			vec := q.Vector
			if qi == 5 {
				vec = nil
			}
			query := q.Text
			if qi == 6 {
				query = ""
			}
			k := []int{1, 5, 24}[qi%3]
			got, err := s.Search(ctx, f, vec, query, k)
			if err != nil {
				t.Fatal(err)
			}
			want := refSearch(all, f, vec, query, k)
			every := refSearch(all, f, vec, query, len(all))
			exact := func(id string) (vector.Hit, bool) {
				i := slices.IndexFunc(every, func(h vector.Hit) bool { return h.ID == id })
				if i < 0 {
					return vector.Hit{}, false
				}
				return every[i], true
			}
			check(t, fmt.Sprintf("round %d query %d", round, qi), got, want, exact)
		}
	}
}

// BenchmarkSearch searches one user's 10k and 100k points (384 dimensions, 95% in the user
// scope) in every scope, exactly and with the segments quantised (WithExactMax(0); their
// vectors in memory up to DefaultSpillMin points, spilled beyond it, or always spilled with
// WithSpillMin(0)): random Gaussian vectors, and (hash) the hash embedder's vectors of random
// sentences, sparse as the benchmark of recall's and the LoCoMo eval's are.
func BenchmarkSearch(b *testing.B) {
	for _, c := range []struct {
		name string
		n    int
		hash bool
		opts []vector.LocalOption
	}{
		{"exact/10000", 10_000, false, []vector.LocalOption{vector.WithExactMax(math.MaxInt)}},
		{"exact/100000", 100_000, false, []vector.LocalOption{vector.WithExactMax(math.MaxInt)}},
		{"quantised/10000", 10_000, false, []vector.LocalOption{vector.WithExactMax(0)}},
		{"quantised/100000", 100_000, false, []vector.LocalOption{vector.WithExactMax(0)}},
		{"quantised/hash/10000", 10_000, true, []vector.LocalOption{vector.WithExactMax(0)}},
		{"quantised/hash/100000", 100_000, true, []vector.LocalOption{vector.WithExactMax(0)}},
		{"exact/hash/10000", 10_000, true, []vector.LocalOption{vector.WithExactMax(math.MaxInt)}},
		{"spilled/hash/10000", 10_000, true, []vector.LocalOption{vector.WithExactMax(0), vector.WithSpillMin(0)}},
	} {
		n := c.n
		b.Run(c.name, func(b *testing.B) {
			ctx := context.Background()
			s, err := vector.OpenLocal(b.TempDir(), "bench", 384, c.opts...)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			r := rand.New(rand.NewPCG(1, 2))
			point := func() vector.Point {
				p := randomPoint(r, "a", "u", 384)
				if c.hash {
					words := make([]string, 6+r.IntN(8))
					for i := range words {
						words[i] = searchWords[r.IntN(len(searchWords))]
					}
					p.Text = fmt.Sprintf("%s (note %d)", strings.Join(words, " "), r.IntN(n))
					vs, err := embed.NewHash().Embed(ctx, []string{p.Text})
					if err != nil {
						b.Fatal(err)
					}
					p.Vector = vs[0]
				}
				return p
			}
			for i := 0; i < n; i += 1000 {
				batch := make([]vector.Point, 1000)
				for j := range batch {
					batch[j] = point()
					batch[j].Scope = "user"
					if j%20 == 0 {
						batch[j].Scope = "agent"
					}
				}
				if err := s.Upsert(ctx, "bench", batch); err != nil {
					b.Fatal(err)
				}
			}
			qs := make([]vector.Point, 64)
			for i := range qs {
				qs[i] = point()
			}
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				q := qs[i%len(qs)]
				for _, scope := range []string{"user", "agent", "archive"} {
					f := vector.Filter{AccountID: "a", UserID: "u", Scopes: []string{scope}}
					if _, err := s.Search(ctx, f, q.Vector, q.Text, 24); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}

// BenchmarkSearchContexts is recall's search of the session contexts (services/recall
// session_context.go): the best 48 by dense cosine, no keyword side, among a user's context
// points (two per archive: 2,000 are a thousand archives) beside 10,000 memories; compare one
// scope's search in BenchmarkSearch/exact/10000 (three scopes an op there).
func BenchmarkSearchContexts(b *testing.B) {
	for _, n := range []int{200, 2000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			ctx := context.Background()
			s, err := vector.OpenLocal(b.TempDir(), "bench", 384)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			r := rand.New(rand.NewPCG(1, 2))
			var pts []vector.Point
			for i := range 10_000 + n {
				p := randomPoint(r, "a", "u", 384)
				p.Scope = "user"
				if i >= 10_000 {
					p.Scope, p.Kind, p.Text = "context", "context", ""
				}
				pts = append(pts, p)
			}
			if err := s.Upsert(ctx, "bench", pts); err != nil {
				b.Fatal(err)
			}
			q := randomPoint(r, "a", "u", 384)
			f := vector.Filter{AccountID: "a", UserID: "u", Scopes: []string{"context"}}
			for b.Loop() {
				if _, err := s.Search(ctx, f, q.Vector, "", 48); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
