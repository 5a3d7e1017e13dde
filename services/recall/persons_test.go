package recall

import (
	"context"
	"maps"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/membus/membus/pkg/contract"
	"github.com/membus/membus/pkg/embed"
	"github.com/membus/membus/pkg/metrics"
	"github.com/membus/membus/pkg/store"
	"github.com/membus/membus/pkg/vector"
)

func TestNamedSpeakers(t *testing.T) {
	contexts := map[speakerSession]float64{{"s1", "Audrey"}: 0.5, {"s1", "Andrew"}: 0.4, {"s2", "user"}: 0.3}
	for _, tc := range []struct {
		query string
		want  []string
	}{
		{"What pets do Audrey and Andrew both have?", []string{"Audrey", "Andrew"}},
		{"What do Andrew and Audrey have in common?", []string{"Andrew", "Audrey"}},
		{"Audrey and Andrew: who hikes, Andrew or Audrey?", []string{"Audrey", "Andrew"}},
		{"Which pets does AUDREY have, and andrew?", nil},       // not capitalised names
		{"What did Audrey's and Andrew's dogs eat?", nil},       // possessives are other words
		{"What did Audrey buy in Paris?", []string{"Audrey"}},   // Paris is no speaker
		{"What did the user tell Audrey?", []string{"Audrey"}},  // a role is no name
		{"Where did Audrey and audrey go?", []string{"Audrey"}}, // once each
		{"What did Audrey and Andrew and Bo do?", []string{"Audrey", "Andrew"}},
	} {
		if got := namedSpeakers(tc.query, contexts); !slices.Equal(got, tc.want) {
			t.Errorf("namedSpeakers(%q) = %q, want %q", tc.query, got, tc.want)
		}
	}
}

// maskingEmbedder is the hash embedder as a learned one (no provider) that can mask words of a
// query: a row reads the query without its drop list's words, as the model's masked attention
// does. It records the drop lists it is asked for.
type maskingEmbedder struct {
	embed.Embedder
	mu    sync.Mutex
	drops [][][]string
}

func (m *maskingEmbedder) EmbedQueryMasked(ctx context.Context, query string, drops [][]string) ([][]float32, error) {
	m.mu.Lock()
	m.drops = append(m.drops, drops)
	m.mu.Unlock()
	texts := make([]string, len(drops))
	for i, drop := range drops {
		var kept []string
		for _, w := range strings.Fields(query) {
			if !slices.ContainsFunc(drop, func(d string) bool { return strings.EqualFold(d, strings.Trim(w, "?,.")) }) {
				kept = append(kept, w)
			}
		}
		texts[i] = strings.Join(kept, " ")
	}
	return m.Embed(ctx, texts)
}

// TestRecallPersonQueries, through the local index and SQL: a question naming two of the
// user's speakers is embedded once per person with the other's name, "both" and "and" masked
// out, and each candidate gains personWeight × (its better person's cosine − the question's);
// a question naming one speaker, or an embedder that cannot mask, ranks as before.
func TestRecallPersonQueries(t *testing.T) {
	e := newEnv(t, false)
	e.archiveSession("acme", "alice", "s1",
		named("Audrey", "I adopted two dogs, Pepper and Panda, from the shelter."),
		named("Andrew", "My cat naps on the couch all day."),
		named("Audrey", "We should go hiking with the dogs soon."),
		named("Andrew", "The cat hates hiking."))
	on := Defaults()
	on.PersonQueries = true // MEMBUS_RECALL_PERSON_QUERIES=true: off by default
	recall := func(emb embed.Embedder, query string) map[string]float64 {
		score := map[string]float64{}
		for id, tr := range e.traceWith(on, emb, "alice", query) {
			score[id] = tr.Score
		}
		return score
	}

	const both = "What pets do Audrey and Andrew both have?"
	masking := &maskingEmbedder{Embedder: e.emb}
	// Without the masked rows (an embedder that cannot mask), the question names two speakers
	// and does not add its dense part again after the lift; with them, it does.
	with, without := recall(masking, both), e.traceWith(on, &recordingEmbedder{Embedder: e.emb}, "alice", both)
	if want := [][][]string{{{"Andrew", "both", "and"}, {"Audrey", "both", "and"}}}; !slices.EqualFunc(masking.drops, want, func(a, b [][]string) bool {
		return slices.EqualFunc(a, b, slices.Equal)
	}) {
		t.Fatalf("masked rows asked for %q, want %q", masking.drops, want)
	}
	rows, err := masking.EmbedQueryMasked(e.ctx, both, [][]string{{"Andrew", "both", "and"}, {"Audrey", "both", "and"}})
	if err != nil {
		t.Fatal(err)
	}
	q, err := e.emb.Embed(e.ctx, []string{both})
	if err != nil {
		t.Fatal(err)
	}
	if len(with) == 0 || len(with) != len(without) {
		t.Fatalf("%d candidates with the person rows, %d without", len(with), len(without))
	}
	moved := 0
	for id, s := range with {
		p, err := e.vec.Get(e.ctx, "acme", "alice", id)
		if err != nil {
			t.Fatal(err)
		}
		cos := func(v []float32) float64 { return clamp01(float64(embed.Cosine(p.Vector, v))) }
		base := without[id]
		want := base.Score + denseAfterLift*base.Parts.Dense + personWeight*(max(cos(rows[0]), cos(rows[1]))-cos(q[0]))
		if math.Abs(s-want) > 1e-6 {
			t.Errorf("%s (%q): %v with the person rows, want %v (%v without)", id, p.Text, s, want, base.Score)
		}
		if s != base.Score {
			moved++
		}
	}
	if moved == 0 {
		t.Fatal("no candidate moved with the person rows")
	}

	fams, err := e.svc.d.Metrics.Families()
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := metrics.Value(fams, "membus_recall_person_queries_total", nil); n != 1 {
		t.Errorf("membus_recall_person_queries_total %v, want 1", n)
	}
	masking.drops = nil
	svc, err := New(Defaults(), Deps{NC: e.svc.d.NC, Names: e.names, Store: e.st, Embedder: masking, Vectors: e.vec, Metrics: e.svc.d.Metrics})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Recall(e.ctx, "acme", contract.RecallRequest{UserID: "alice", Query: both}); err != nil || len(masking.drops) != 0 {
		t.Fatalf("by default (off): %v, masked rows asked for %q, want none", err, masking.drops)
	}
	for _, query := range []string{"What pets does Audrey have?", "What pets do Audrey and Paris have?"} {
		one, base := recall(masking, query), recall(&recordingEmbedder{Embedder: e.emb}, query)
		if len(masking.drops) != 0 || !maps.Equal(one, base) {
			t.Errorf("%q: masked rows %q, scores %v against %v; want none and the same", query, masking.drops, one, base)
		}
	}
}

// TestDenseAfterLiftTwoSpeakers: a question naming two of the user's speakers does not add its
// dense part again after the lift, unless the per-person queries ranked it by each person.
func TestDenseAfterLiftTwoSpeakers(t *testing.T) {
	e := newEnv(t, false)
	svc, err := New(Defaults(), Deps{NC: e.svc.d.NC, Names: e.names, Store: e.st, Embedder: &recordingEmbedder{Embedder: e.emb}, Vectors: e.vec, Metrics: e.svc.d.Metrics})
	if err != nil {
		t.Fatal(err)
	}
	const query = "What pets do Audrey and Andrew both have?"
	mem := vector.Point{Kind: contract.KindMemory, Scope: contract.ScopeUser}
	hits := [][]vector.Hit{{{ID: "m1", Dense: 0.9, Keyword: 2, Point: mem}, {ID: "m2", Dense: 0.6, Point: mem}}}
	rows := [][]store.RecallRow{{{ID: "m1", Scope: contract.ScopeUser, Text: "Audrey adopted two dogs."}, {ID: "m2", Scope: contract.ScopeUser, Text: "Andrew has a cat."}}}
	both := map[speakerSession]float64{{"s1", "Audrey"}: 0.5, {"s1", "Andrew"}: 0.4}
	one := map[speakerSession]float64{{"s1", "Audrey"}: 0.5, {"s1", "Zoe"}: 0.4}
	score := func(f found) map[string]contract.ScoreParts {
		f.hits, f.rows = hits, rows
		cands, _ := svc.candidates(e.ctx, "acme", f, query, time.Now())
		out := map[string]contract.ScoreParts{}
		for _, c := range cands {
			p := c.parts
			p.Fused = c.score // the final score, to compare
			out[c.id] = p
		}
		return out
	}
	// Scored again after the lift: one named speaker, or the per-person queries ran (all 0).
	ref := score(found{contexts: one})
	for _, tc := range []struct {
		name  string
		f     found
		again bool
	}{
		{"one of the two names a speaker", found{contexts: one}, true},
		{"two speakers named", found{contexts: both}, false},
		{"two speakers named, the per-person queries ran", found{contexts: both, persons: map[string]float64{"m1": 0, "m2": 0}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for id, p := range score(tc.f) {
				want := ref[id].Fused
				if !tc.again {
					want -= denseAfterLift * p.Dense
				}
				if p.Dense == 0 || math.Abs(p.Fused-want) > 1e-9 {
					t.Errorf("%s: score %v (dense part %v), want %v", id, p.Fused, p.Dense, want)
				}
			}
		})
	}
}
