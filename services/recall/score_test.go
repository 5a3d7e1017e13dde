package recall

import (
	"math"
	"testing"
	"time"

	"github.com/membus/membus/pkg/contract"
	"github.com/membus/membus/pkg/memory"
	"github.com/membus/membus/pkg/store"
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestBoosts(t *testing.T) {
	cases := []struct {
		name string
		in   boostInput
		want float64
	}{
		{"leaf memory, no overlap", boostInput{kind: contract.KindMemory, category: memory.Fact}, 0.12},
		{"archive message is a leaf", boostInput{kind: contract.KindArchive}, 0.12},
		{"digest is not a leaf", boostInput{kind: contract.KindDigest, category: memory.Digest}, 0},
		{"event on a temporal query", boostInput{kind: contract.KindMemory, category: memory.Event, temporal: true}, 0.22},
		{"event on another query", boostInput{kind: contract.KindMemory, category: memory.Event}, 0.12},
		{"preference on a preference query", boostInput{kind: contract.KindMemory, category: memory.Preference, preference: true}, 0.20},
		{"fact on a preference query", boostInput{kind: contract.KindMemory, category: memory.Fact, preference: true}, 0.12},
		{"full lexical overlap", boostInput{kind: contract.KindMemory, category: memory.Fact, overlap: 1}, 0.32},
		{"half lexical overlap", boostInput{kind: contract.KindMemory, category: memory.Fact, overlap: 0.5}, 0.22},
		{"overlap is capped at +0.2", boostInput{kind: contract.KindMemory, overlap: 3}, 0.32},
		{"said or happened in the period the query names", boostInput{kind: contract.KindArchive, inPeriod: true}, 0.32},
		{"everything", boostInput{kind: contract.KindMemory, category: memory.Event, temporal: true, preference: true, overlap: 1, inPeriod: true}, 0.62},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := boost(c.in); !near(got, c.want) {
				t.Fatalf("boost = %v, want %v", got, c.want)
			}
		})
	}
}

func TestDecay(t *testing.T) {
	now := time.Date(2025, 6, 30, 12, 0, 0, 0, time.UTC)
	day := 24 * time.Hour
	cases := []struct {
		name     string
		category string
		age      time.Duration
		want     float64
	}{
		{"fresh", memory.Fact, 0, 1},
		{"15 days", memory.Fact, 15 * day, math.Pow(0.5, 0.5)},
		{"one half-life", memory.Event, 30 * day, 0.5},
		{"floor at 0.5", memory.Fact, 90 * day, 0.5},
		{"from the future", memory.Fact, -10 * day, 1},
		{"profile is evergreen", memory.Profile, 365 * day, 1},
		{"preference is evergreen", memory.Preference, 365 * day, 1},
		{"entity is evergreen", memory.Entity, 365 * day, 1},
		{"archive message decays", "", 30 * day, 0.5},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := decayFactor(c.category, now.Add(-c.age), now); !near(got, c.want) {
				t.Fatalf("decay = %v, want %v", got, c.want)
			}
		})
	}
	if got := decayFactor(memory.Fact, time.Time{}, now); got != 1 {
		t.Fatalf("undated: %v, want 1", got)
	}
}

func TestFusion(t *testing.T) {
	cases := []struct {
		name          string
		dense, kw     float64
		dRank, kRank  int
		weighted, rrf float64
	}{
		{"best on both sides", 1, 1, 1, 1, 1, 1},
		{"dense only", 0.8, 0, 1, 0, 0.56, 0.5},
		{"keyword only", 0, 1, 0, 1, 0.3, 0.5},
		{"second on both", 0.5, 0.5, 2, 2, 0.5, (2 / 62.0) / (2 / 61.0)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := weightedFusion(c.dense, c.kw); !near(got, c.weighted) {
				t.Errorf("weighted = %v, want %v", got, c.weighted)
			}
			if got := rrfFusion(c.dRank, c.kRank); !near(got, c.rrf) {
				t.Errorf("rrf = %v, want %v", got, c.rrf)
			}
		})
	}
	r := ranks(4, func(i int) float64 { return []float64{0.2, 0, 0.9, 0.2}[i] })
	if want := []int{2, 0, 1, 3}; !equalInts(r, want) {
		t.Fatalf("ranks = %v, want %v (ties by index, 0 = not found)", r, want)
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestMMR(t *testing.T) {
	// Items 0 and 1 are near-duplicates; 2 is different and scores a little lower. With λ 0.7
	// the duplicate's value is 0.7·0.9 − 0.3·1 = 0.33 < 0.7·0.8 − 0.3·0 = 0.56: 2 goes second.
	sim := [][]float64{{1, 1, 0}, {1, 1, 0}, {0, 0, 1}}
	cases := []struct {
		name   string
		scores []float64
		sim    [][]float64
		want   []int
	}{
		{"duplicate pushed down", []float64{1, 0.9, 0.8}, sim, []int{0, 2, 1}},
		{"no similarity keeps score order", []float64{1, 0.9, 0.8}, [][]float64{{1, 0, 0}, {0, 1, 0}, {0, 0, 1}}, []int{0, 1, 2}},
		// 0.7·0.9 − 0.3·0.5 = 0.48 > 0.7·0.5 − 0 = 0.35: a partial overlap does not outweigh the gap.
		{"partial similarity", []float64{1, 0.9, 0.5}, [][]float64{{1, 0.5, 0}, {0.5, 1, 0}, {0, 0, 1}}, []int{0, 1, 2}},
		{"empty", nil, nil, []int{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := mmrOrder(c.scores, func(i, j int) float64 { return c.sim[i][j] })
			if !equalInts(got, c.want) {
				t.Fatalf("order = %v, want %v", got, c.want)
			}
		})
	}
	a, b := termSet("Alice plays cello"), termSet("Alice plays guitar")
	if got := jaccard(a, b); !near(got, 0.5) {
		t.Fatalf("jaccard = %v, want 0.5 (2 shared of 4)", got)
	}
}

func TestCutText(t *testing.T) {
	long := "first line of the item\nsecond line that is long enough to be cut off here"
	cases := []struct {
		name, in string
		n        int
		want     string
	}{
		{"fits", "short", 10, "short"},
		{"at a line boundary", long, 40, "first line of the item"},
		{"at a word", "alpha beta gamma delta epsilon", 20, "alpha beta gamma…"},
		{"hard cut", "abcdefghijklmnopqrstuvwxyz", 10, "abcdefg…"},
		{"never splits a rune", "ééééééééééé", 8, "éé…"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := cutText(c.in, c.n)
			if got != c.want || len(got) > c.n {
				t.Fatalf("cutText(%q, %d) = %q (%d bytes), want %q", c.in, c.n, got, len(got), c.want)
			}
		})
	}
}

func TestBM25(t *testing.T) {
	docs := [][]string{{"cello", "quartet"}, {"tea"}, {"cello"}}
	s := bm25([]string{"cello"}, len(docs), func(i int) []string { return docs[i] })
	if s[1] != 0 || s[0] <= 0 || s[2] <= s[0] {
		t.Fatalf("scores %v: want tea 0, the shorter cello document first", s)
	}
}

func TestAsksQuestion(t *testing.T) {
	cases := []struct {
		name, text string
		want       bool
	}{
		{"a message that ends asking", "Caroline: Wow, Mel! What made you paint it?", true},
		{"its previous turn on the second line does not count", "Melanie: A sunset.\nCaroline: What did you paint?", false},
		{"the message asks, the previous turn states", "Caroline: What did you paint?\nMelanie: I painted a lake.", true},
		{"trailing spaces are ignored", "Caroline: Any plans?  ", true},
		{"a full-width question mark", "ユーザー: 何を描いたの？", true},
		{"a question inside, a statement at the end", "Melanie: Guess what? I signed up for pottery.", false},
		{"a statement", "Melanie: I signed up for a pottery class yesterday.", false},
		{"empty", "", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := asksQuestion(c.text); got != c.want {
				t.Errorf("asksQuestion(%q) = %v, want %v", c.text, got, c.want)
			}
		})
	}
}

// TestPenaliseQuestions: after the lift, the reply to a question ranks above the question it
// answers, the question still lifts it from its own score, and only archive messages that ask
// are lowered.
func TestPenaliseQuestions(t *testing.T) {
	q := archiveCand("q", "s1", 5, 1.0)
	q.text = "Caroline: What did you paint last week?"
	a := archiveCand("a", "s1", 6, 0.3)
	a.text = "Melanie: A sunset over the lake.\nCaroline: What did you paint last week?"
	m := memoryCand("m", 0.5)
	m.text = "Did Melanie paint a sunset?"
	cands := []candidate{q, a, m}
	pos := map[store.Source]place{q.sources[0]: {seq: 5}, a.sources[0]: {seq: 6}}
	liftByNeighbours(cands, pos)
	penaliseQuestions(cands)
	want := map[string]float64{"q": 1.0 - questionPenalty, "a": neighbourWeight, "m": 0.5}
	for _, cd := range cands {
		if !near(cd.score, want[cd.id]) {
			t.Errorf("%s: score %v, want %v", cd.id, cd.score, want[cd.id])
		}
	}
	if cands[1].score <= cands[0].score {
		t.Errorf("the reply %v does not rank above the question %v", cands[1].score, cands[0].score)
	}
	if !near(cands[0].parts.Boost, -questionPenalty) {
		t.Errorf("the question's boost %v does not carry the penalty", cands[0].parts.Boost)
	}
}
