package eval

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/membus/membus/pkg/contract"
)

// TestExplainBucket: each gold turn lands in the first bucket that applies.
func TestExplainBucket(t *testing.T) {
	top := map[string]bool{"D1:1": true}
	trace := []contract.TraceEntry{
		{ID: "m1", Kept: true, Sources: []string{"D1:1"}},
		{ID: "m2", Kept: true, Sources: []string{"D1:2"}},                        // returned at rank 11+
		{ID: "m3", Dropped: "over the limit", Sources: []string{"D1:3", "D1:2"}}, // D1:2's better fate wins
		{ID: "a4", Dropped: "collapsed: m9 states the same message", Sources: []string{"D1:4"}},
		{ID: "m5", Dropped: "score 0.100 below threshold 0.15", Sources: []string{"D1:5"}},
		{ID: "m6", Dropped: "inactive in SQL (superseded, deleted or foreign)"},
	}
	e := newExplainScore([]map[string]bool{{"D1:6": true}})
	cases := []struct{ gold, want string }{
		{"D1:1", lossFound},
		{"D1:2", lossRanked},
		{"D1:3", lossBeyond},
		{"D1:4", lossCollapsed},
		{"D1:5", lossDropped},
		{"D1:6", lossNoCandidate},
		{"D1:7", lossNoMemory},
	}
	for _, c := range cases {
		if got := e.bucket(0, c.gold, top, trace); got != c.want {
			t.Errorf("gold %s: %q, want %q", c.gold, got, c.want)
		}
	}
	e.add(0, locomoQuestion{Category: 2, Evidence: []string{"D1:1", "D1:7"}}, evalAnswer{ranked: []evalItem{{sources: []string{"D1:1"}}}, trace: trace})
	e.add(0, locomoQuestion{Category: 5, Evidence: []string{"D1:1"}}, evalAnswer{trace: trace})
	reps := e.reports()
	if len(reps) != 3 || reps[0].Category != "1-4" || reps[0].Gold != 2 || reps[0].Shares[lossFound] != 0.5 || reps[0].Shares[lossNoMemory] != 0.5 {
		t.Fatalf("reports %+v: want 1-4 (2 gold turns, half found, half no memory), 2 and 5 apart", reps)
	}
	if reps[2].Category != "5" || reps[2].Shares[lossRanked] != 1 {
		t.Errorf("category 5 %+v: kept apart from the headline", reps[2])
	}
}

// TestEvalExplainSmoke: --explain through the in-process membus on the tiny conversation: the
// buckets of each category add up to its gold turns, and found@10 agrees with recall@10.
func TestEvalExplainSmoke(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var notes bytes.Buffer
	res, err := evalLocomo(ctx, tinyConvs(t), evalParams{sync: "interval", embedder: "hash", explain: true, notes: &notes})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.explain) == 0 || res.explain[0].Category != "1-4" {
		t.Fatalf("explain %+v", res.explain)
	}
	for _, r := range res.explain {
		sum := 0.0
		for _, b := range lossBuckets {
			sum += r.Shares[b]
		}
		if sum < 0.999 || sum > 1.001 {
			t.Errorf("category %s: shares add up to %.4f", r.Category, sum)
		}
	}
	if got, r10 := res.explain[0].Shares[lossFound], res.recall[0].Categories["1-4"].R10; got != r10 {
		// R@10 averages per question, found@10 pools gold turns: equal when every question has one.
		t.Logf("found@10 %.4f, R@10 %.4f (they differ only with multi-turn evidence)", got, r10)
	}
	var out bytes.Buffer
	if err := writeExplainTable(&out, res.explain); err != nil || !bytes.Contains(out.Bytes(), []byte(lossNoMemory)) {
		t.Errorf("table %q, %v", out.String(), err)
	}
}
