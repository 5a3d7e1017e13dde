package recall

import (
	"context"
	"errors"
	"math"
	"slices"
	"sync"
	"testing"

	"github.com/membus/membus/pkg/contract"
	"github.com/membus/membus/pkg/embed"
	"github.com/membus/membus/pkg/projection"
	"github.com/membus/membus/pkg/vector"
)

func TestQueryNames(t *testing.T) {
	for _, tc := range []struct {
		query string
		want  []string
	}{
		{"What books has Melanie read?", []string{"Melanie"}},
		{"What did Caroline and Melanie's kids paint?", []string{"Caroline", "Melanie"}},
		{"When did Caroline go to the LGBTQ support group?", []string{"Caroline"}},
		{"Did I tell you about Paris in May?", []string{"Paris", "May"}},
		{"Is Jon's studio near Jon’s flat, Jon?", []string{"Jon"}},
		{"Wo wohnt Jürgen jetzt?", []string{"Jürgen"}},
		{"what does alice like", nil},
		{"Melanie", nil},
		{"", nil},
	} {
		if got := queryNames(tc.query); !slices.Equal(got, tc.want) {
			t.Errorf("queryNames(%q) = %q, want %q", tc.query, got, tc.want)
		}
	}
}

func TestAwayFrom(t *testing.T) {
	q := []float32{1, 0, 0}
	n := []float32{0.6, 0.8, 0}
	for _, tc := range []struct {
		w     float64
		names [][]float32
		want  []float32
	}{
		{0, [][]float32{n}, []float32{1, 0, 0}},
		{0.5, [][]float32{n}, unit(0.7, -0.4, 0)},
		{0.5, [][]float32{n, {0, 0, 1}}, unit(0.7, -0.4, -0.5)},
	} {
		got := awayFrom(q, tc.names, tc.w)
		for i := range got {
			if math.Abs(float64(got[i]-tc.want[i])) > 1e-6 {
				t.Errorf("w %v, %d names: %v, want %v", tc.w, len(tc.names), got, tc.want)
				break
			}
		}
	}
	// A name that cancels the query leaves the query's own vector, never a NaN.
	if got := awayFrom(q, [][]float32{q}, 1); !slices.Equal(got, q) {
		t.Errorf("cancelled: %v, want the query's own %v", got, q)
	}
}

func unit(v ...float64) []float32 {
	n := 0.0
	for _, x := range v {
		n += x * x
	}
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(x / math.Sqrt(n))
	}
	return out
}

// recordingEmbedder records the query batches it embeds.
type recordingEmbedder struct {
	embed.Embedder
	fail    string // a text it fails to embed
	mu      sync.Mutex
	batches [][]string
}

func (r *recordingEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	r.mu.Lock()
	r.batches = append(r.batches, slices.Clone(texts))
	r.mu.Unlock()
	if r.fail != "" && slices.Contains(texts, r.fail) {
		return nil, errors.New("embedder: model run failed")
	}
	return r.Embedder.Embed(ctx, texts)
}

// recordingVectors records the vectors it is searched with.
type recordingVectors struct {
	vector.Store
	mu        sync.Mutex
	vecs      [][]float32 // the searches of the scopes a request can name
	ks        []int
	contexts  [][]float32 // the searches of the session contexts (session_context.go)
	contextKs []int
}

func (r *recordingVectors) Search(ctx context.Context, f vector.Filter, v []float32, q string, k int) ([]vector.Hit, error) {
	r.mu.Lock()
	if slices.Equal(f.Scopes, []string{projection.ScopeContext}) {
		r.contexts = append(r.contexts, v)
		r.contextKs = append(r.contextKs, k)
	} else {
		r.vecs = append(r.vecs, v)
		r.ks = append(r.ks, k)
	}
	r.mu.Unlock()
	return r.Store.Search(ctx, f, v, q, k)
}

// TestCandidatesPerSide: every scope's search asks for the configured number of candidates a
// side (MEMBUS_RECALL_CANDIDATES), SPEC's 24 by default, and the session contexts' search for
// twice as many (a scope's two sides).
func TestCandidatesPerSide(t *testing.T) {
	e := newEnv(t, false)
	e.seed("acme", "alice", fact{text: "Alice read Dune last spring."})
	for _, n := range []int{0, 7, 100} {
		vecs := &recordingVectors{Store: e.vec}
		cfg, want := Defaults(), contract.DefaultRecallCandidates
		if n > 0 {
			cfg.CandidatesPerSide, want = n, n
		}
		// A learned embedder (recordingEmbedder hides the hash embedder's provider): the
		// session contexts are searched too.
		svc, err := New(cfg, Deps{NC: e.svc.d.NC, Names: e.names, Store: e.st, Embedder: &recordingEmbedder{Embedder: e.emb}, Vectors: vecs, Metrics: e.svc.d.Metrics})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := svc.Recall(e.ctx, "acme", contract.RecallRequest{UserID: "alice", Query: "what did Alice read"}); err != nil {
			t.Fatal(err)
		}
		if len(vecs.ks) == 0 {
			t.Fatal("no search")
		}
		for _, k := range vecs.ks {
			if k != want {
				t.Errorf("configured %d: searched for %d a side, want %d", n, k, want)
			}
		}
		if !slices.Equal(vecs.contextKs, []int{2 * want}) {
			t.Errorf("configured %d: searched the session contexts for %v, want once for %d", n, vecs.contextKs, 2*want)
		}
	}
}

// TestRecallSearchesAwayFromTheNames: the query is embedded alone, then each name it mentions
// alone, and every scope is searched with the query's vector moved away from the names'; a
// query without a name, or under dense-only fusion, is searched with its own vector. The
// session contexts are searched with the query's own vector, except under dense-only fusion,
// which ranks by the dense part alone.
func TestRecallSearchesAwayFromTheNames(t *testing.T) {
	e := newEnv(t, false)
	e.seed("acme", "alice", fact{text: "Alice read Dune last spring."})
	own := func(text string) []float32 {
		v, err := e.emb.Embed(e.ctx, []string{text})
		if err != nil {
			t.Fatal(err)
		}
		return v[0]
	}
	q := "What books have Alice and Bob read?"
	away := awayFrom(own(q), [][]float32{own("Alice"), own("Bob")}, nameWeight)
	for _, tc := range []struct {
		name, query, fusion string
		fail                string // a text the embedder fails on
		batches             [][]string
		vec                 []float32
	}{
		{"names two", q, contract.FusionWeighted, "", [][]string{{q}, {"Alice"}, {"Bob"}}, away},
		{"names two, rrf", q, contract.FusionRRF, "", [][]string{{q}, {"Alice"}, {"Bob"}}, away},
		{"no name", "what books has she read", contract.FusionWeighted, "", [][]string{{"what books has she read"}}, own("what books has she read")},
		{"dense only", q, contract.FusionDense, "", [][]string{{q}}, own(q)},
		// A name the model fails on leaves the query as asked; the search stays dense.
		{"a name fails", q, contract.FusionWeighted, "Bob", [][]string{{q}, {"Alice"}, {"Bob"}}, own(q)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			emb := &recordingEmbedder{Embedder: e.emb, fail: tc.fail}
			vecs := &recordingVectors{Store: e.vec}
			cfg := Defaults()
			cfg.Fusion = tc.fusion
			svc, err := New(cfg, Deps{NC: e.svc.d.NC, Names: e.names, Store: e.st, Embedder: emb, Vectors: vecs, Metrics: e.svc.d.Metrics})
			if err != nil {
				t.Fatal(err)
			}
			resp, err := svc.Recall(e.ctx, "acme", contract.RecallRequest{UserID: "alice", Query: tc.query})
			if err != nil || resp.Degraded || len(resp.Items) == 0 {
				t.Fatalf("resp %+v, err %v: want Alice's memory", resp, err)
			}
			if !slices.EqualFunc(emb.batches, tc.batches, slices.Equal[[]string]) {
				t.Errorf("embedded %q, want %q", emb.batches, tc.batches)
			}
			if len(vecs.vecs) == 0 {
				t.Fatal("no search")
			}
			for _, v := range vecs.vecs {
				if !slices.Equal(v, tc.vec) {
					t.Errorf("searched with %v…, want %v…", v[:4], tc.vec[:4])
					break
				}
			}
			wantContexts := [][]float32{own(tc.query)}
			if tc.fusion == contract.FusionDense {
				wantContexts = nil
			}
			if !slices.EqualFunc(vecs.contexts, wantContexts, slices.Equal[[]float32]) {
				t.Errorf("searched the session contexts %d times (with the query as asked: %v), want %d",
					len(vecs.contexts), len(vecs.contexts) == 1 && slices.Equal(vecs.contexts[0], own(tc.query)), len(wantContexts))
			}
		})
	}
}

// TestDenseAfterLift: every candidate gains denseAfterLift × its dense part, in its boost, so
// of two candidates the lift left level the one closer to the query ranks first.
func TestDenseAfterLift(t *testing.T) {
	cands := []candidate{
		{id: "lifted", parts: contract.ScoreParts{Dense: 0.2, Fused: 0.3, Boost: 0.4}, score: 0.7},
		{id: "close", parts: contract.ScoreParts{Dense: 0.6, Fused: 0.7}, score: 0.7},
	}
	addDenseAfterLift(cands)
	for _, c := range cands {
		if want := c.parts.Fused + c.parts.Boost; math.Abs(c.score-want) > 1e-12 {
			t.Errorf("%s: score %v, want fused + boost %v", c.id, c.score, want)
		}
	}
	if !(cands[1].score > cands[0].score) {
		t.Errorf("close %v, lifted %v: want the one closer to the query first", cands[1].score, cands[0].score)
	}
	if want := 0.7 + denseAfterLift*0.6; math.Abs(cands[1].score-want) > 1e-12 {
		t.Errorf("close: score %v, want %v", cands[1].score, want)
	}
}

type namedEmbedder struct {
	embed.Embedder
	provider string
}

func (n namedEmbedder) Provider() string { return n.provider }

func TestLearned(t *testing.T) {
	hash := embed.NewHash()
	for _, tc := range []struct {
		name string
		e    embed.Embedder
		want bool
	}{
		{"hash", hash, false},
		{"hash behind the cache", embed.NewCached(hash, 10), false},
		{"onnx", namedEmbedder{hash, "onnx"}, true},
		{"onnx behind the cache", embed.NewCached(namedEmbedder{hash, "onnx"}, 10), true},
		{"no provider", &recordingEmbedder{Embedder: hash}, true},
	} {
		if got := learned(tc.e); got != tc.want {
			t.Errorf("%s: learned %v, want %v", tc.name, got, tc.want)
		}
	}
}
