package eval

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// locomoDevPath is the dev split: MEMBUS_LOCOMO when set (make test sets it for a clone made
// away from the shared data), else the shared data beside the clone (../shared from the clone
// root), relative to this package.
var locomoDevPath = cmp.Or(os.Getenv("MEMBUS_LOCOMO"),
	filepath.Join("..", "..", "..", "..", "..", "shared", "data", "locomo", "locomo-dev.json"))

func TestBM25Tokens(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"What did Caroline research?", []string{"caroline", "research"}},
		{"Melanie: I've been to the LGBTQ+ support group 2 times!", []string{"melanie", "ve", "lgbtq", "support", "group", "2", "times"}},
		{"Who is he? When was it, and how?", nil},
		{"Café über", []string{"caf", "ber"}}, // [a-z0-9]+ runs only, as the README says
	}
	for _, tc := range tests {
		if got := bm25Tokens(tc.in); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("bm25Tokens(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestBM25RankScoresAndTies(t *testing.T) {
	ix := newBM25Index([]string{
		"A: nothing relevant here",
		"B: the painting of a lake",
		"C: another thing entirely",
		"D: a painting of a sunset",
		"E: something else again",
	})
	got := ix.rank("painting sunset")
	// The document matching both terms, then the one matching one, then the zero-score rest in
	// turn order.
	if want := []int{3, 1, 0, 2, 4}; !reflect.DeepEqual(got, want) {
		t.Fatalf("rank = %v, want %v", got, want)
	}
	// idf = ln(1 + (N − df + 0.5)/(df + 0.5)): N 5, df 2 → ln(1 + 3.5/2.5).
	if got, want := ix.idf["painting"], math.Log(1+3.5/2.5); math.Abs(got-want) > 1e-12 {
		t.Fatalf("idf(painting) = %v, want %v", got, want)
	}
	if got := newBM25Index([]string{"x: same words", "y: same words"}).rank("same"); !reflect.DeepEqual(got, []int{0, 1}) {
		t.Fatalf("equal scores must keep turn order, got %v", got)
	}
}

func TestLocomoEvidenceNormalisation(t *testing.T) {
	c := locomoConv{turnIndex: map[string]int{"D1:1": 0, "D8:6": 1, "D9:17": 2, "D11:26": 3}}
	tests := []struct {
		in   []string
		want []string
	}{
		{[]string{"D1:1"}, []string{"D1:1"}},
		{[]string{"D8:6; D9:17"}, []string{"D8:6", "D9:17"}},
		{[]string{"D:11:26"}, []string{"D11:26"}},
		{[]string{"D", "D10:19"}, nil}, // malformed, and an id that does not exist
		{[]string{"D1:1", "D1:1"}, []string{"D1:1"}},
	}
	for _, tc := range tests {
		if got := c.normaliseEvidence(tc.in); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("normaliseEvidence(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestBM25ReproducesAnchor checks the baseline against the data README's anchor on the dev
// split: categories 1–4, n 760, R@5 0.516, R@10 0.587, all@10 0.541 (±0.02).
func TestBM25ReproducesAnchor(t *testing.T) {
	if _, err := os.Stat(locomoDevPath); err != nil {
		t.Skipf("LoCoMo dev split not found at %s (the shared data beside the clone; MEMBUS_LOCOMO names another path): %v", locomoDevPath, err)
	}
	convs, err := loadLocomo(locomoDevPath)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := runEval(context.Background(), convs, "bm25", "none", 1, nil, bm25Answers(convs), nil)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		cat                 string
		n                   int
		r5, r10, all10, tol float64
	}{
		{"1-4", 760, 0.516, 0.587, 0.541, 0.02},
		{"4", 418, 0.590, 0.657, 0.651, 0.02},
		{"1", 142, 0.186, 0.272, 0.099, 0.02},
		{"2", 156, 0.700, 0.774, 0.756, 0.02},
		{"3", 44, 0.227, 0.273, 0.159, 0.03},
	}
	for _, tc := range tests {
		got := rep.Categories[tc.cat]
		if got.N != tc.n || math.Abs(got.R5-tc.r5) > tc.tol || math.Abs(got.R10-tc.r10) > tc.tol || math.Abs(got.All10-tc.all10) > tc.tol {
			t.Errorf("category %s: n %d R@5 %.3f R@10 %.3f all@10 %.3f, want n %d R@5 %.3f R@10 %.3f all@10 %.3f (±%.2f)",
				tc.cat, got.N, got.R5, got.R10, got.All10, tc.n, tc.r5, tc.r10, tc.all10, tc.tol)
		}
	}
	if c5 := rep.Categories["5"]; c5.N == 0 {
		t.Errorf("adversarial category missing: %+v", c5)
	}
}

// TestEvalLocomoSmoke runs the whole membus path (ingest through the bus, commits, recall RPCs)
// on a small conversation, with the BM25 baseline beside it, and checks the report's
// structure: every category present, recall values in [0,1], the docs/design.md §10 JSON line fields.
func TestEvalLocomoSmoke(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	convs, err := loadLocomo(filepath.Join("testdata", "locomo-tiny.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(convs) != 1 || len(convs[0].Sessions) != 2 || convs[0].Sessions[0].N != 1 {
		t.Fatalf("tiny data loaded as %+v", convs)
	}
	if got, want := convs[0].lastDate(), time.Date(2023, 5, 25, 13, 14, 0, 0, time.UTC); !got.Equal(want) {
		t.Fatalf("last session date %v, want %v", got, want)
	}
	var notes bytes.Buffer
	res, err := evalLocomo(ctx, convs, evalParams{sync: "interval", embedder: "hash", baseline: "bm25", notes: &notes})
	if err != nil {
		t.Fatal(err)
	}
	reports := res.recall
	if len(reports) != 2 || reports[0].System != "membus" || reports[1].System != "bm25" {
		t.Fatalf("reports %+v, want membus then bm25", reports)
	}
	if !strings.HasPrefix(reports[0].Embedder, "hash") {
		t.Errorf("membus embedder %q, want the pinned hash embedder named", reports[0].Embedder)
	}
	for _, r := range reports {
		for _, c := range evalCategories {
			cat, ok := r.Categories[c.key]
			if !ok {
				t.Errorf("%s: category %s missing", r.System, c.key)
				continue
			}
			for name, v := range map[string]float64{"recall@1": cat.R1, "recall@5": cat.R5, "recall@10": cat.R10, "recall@20": cat.R20,
				"all@10": cat.All10, "budget_recall": cat.BudgetRecall} {
				if v < 0 || v > 1 {
					t.Errorf("%s category %s: %s = %v, not in [0,1]", r.System, c.key, name, v)
				}
			}
			if cat.R1 > cat.R5 || cat.R5 > cat.R10 || cat.R10 > cat.R20 {
				t.Errorf("%s category %s: recall@k not monotone in k: %+v", r.System, c.key, cat)
			}
		}
		// The tiny file has one question of each category with evidence, and one without.
		if n := r.Categories["1-4"].N; n != 4 {
			t.Errorf("%s: n(1-4) = %d, want 4 (the question without evidence skipped)", r.System, n)
		}
	}
	// membus must have recalled something with provenance from the conversation.
	if c := reports[0].Categories["1-4"]; c.Turns10 == 0 || c.AvgInjectedChars == 0 {
		t.Errorf("membus recalled no credited turns: %+v", c)
	}
	// The BM25 baseline on this conversation finds the single-hop evidence at rank 1.
	if c := reports[1].Categories["4"]; c.R1 != 1 {
		t.Errorf("bm25 single-hop R@1 = %v, want 1", c.R1)
	}

	var out bytes.Buffer
	if err := writeEvalJSON(&out, reports...); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], `{"eval":"locomo","system":"membus","config":"default","embedder":"hash`) ||
		!strings.Contains(lines[0], `"categories":{"1-4":{"n":4,"recall@1":`) {
		t.Fatalf("JSON lines:\n%s", out.String())
	}
	for _, l := range lines {
		var line struct {
			Eval, System, Config, Embedder string
			Categories                     map[string]map[string]float64
		}
		if err := json.Unmarshal([]byte(l), &line); err != nil {
			t.Fatalf("not JSON: %v: %s", err, l)
		}
		for _, c := range evalCategories {
			for _, k := range []string{"n", "recall@1", "recall@5", "recall@10", "recall@20", "all@10", "budget_recall", "avg_injected_chars", "turns@10"} {
				if _, ok := line.Categories[c.key][k]; !ok {
					t.Errorf("%s line: categories.%s.%s missing", line.System, c.key, k)
				}
			}
		}
	}
	out.Reset()
	if err := writeEvalTable(&out, reports...); err != nil {
		t.Fatal(err)
	}
	if rows := strings.Split(strings.TrimSpace(out.String()), "\n"); len(rows) != 1+2*len(evalCategories) {
		t.Fatalf("table has %d rows, want a header and %d:\n%s", len(rows), 2*len(evalCategories), out.String())
	}
}

func TestEvalCmdFlags(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no data", []string{"locomo"}, "--data FILE is required"},
		{"bad baseline", []string{"locomo", "--data", "x", "--baseline", "dense"}, "--baseline must be bm25"},
		{"bad sync", []string{"locomo", "--data", "x", "--sync", "never"}, "--sync must be always or interval"},
		{"auto embedder", []string{"locomo", "--data", "x", "--embedder", "auto"}, "must name an embedder"},
		{"too many candidates", []string{"locomo", "--data", "x", "--recall-candidates", "201"}, "--recall-candidates must be between 1 and 200"},
		{"negative candidates", []string{"locomo", "--data", "x", "--recall-candidates", "-1"}, "--recall-candidates must be between 1 and 200"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run(append([]string{"eval"}, tc.args...), &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), tc.want) {
				t.Fatalf("code %d stderr %q, want 2 and %q", code, stderr.String(), tc.want)
			}
		})
	}
}
