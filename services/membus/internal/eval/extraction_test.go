package eval

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestTokenF1(t *testing.T) {
	cases := []struct {
		name string
		a, b string
		want float64
	}{
		{"same words", "Alice lives in Lisbon", "alice LIVES in lisbon", 1},
		{"stop words do not count", "She is a carpenter", "carpenter", 1},
		{"half", "Alice lives Lisbon", "Alice works Oslo", 1.0 / 3},
		{"repeats are a bag", "dog dog", "dog cat", 0.5},
		{"nothing shared", "violin", "sardines", 0},
		{"empty", "", "anything", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := tokenF1(bm25Tokens(c.a), bm25Tokens(c.b)); math.Abs(got-c.want) > 1e-9 {
				t.Errorf("tokenF1(%q, %q) = %v, want %v", c.a, c.b, got, c.want)
			}
		})
	}
}

// TestScoreExtraction: the measures of one conversation from hand-made memories, each rule
// once — a memory sourced at the evidence that states it, one sourced there that does not, an
// observation with no memory at its turn, a near-duplicate pair, a memory that restates its
// whole (long) turn.
func TestScoreExtraction(t *testing.T) {
	c := tinyConvs(t)[0]
	if len(c.Observations) != 7 {
		t.Fatalf("%d observations loaded, want 7 (the one with evidence D9:9 dropped): %+v", len(c.Observations), c.Observations)
	}
	mem := func(text string, sources ...string) extractedMemory {
		return extractedMemory{text: text, tokens: bm25Tokens(text), sources: sources}
	}
	mems := []extractedMemory{
		mem("Alice moved to Lisbon last month.", "D1:1"),        // states observation 1
		mem("Alice moved to Lisbon a month ago.", "D1:1"),       // near-duplicate of the first
		mem("Bob says hello.", "D1:2"),                          // sourced at Bob's Oslo turn, states nothing
		mem("Bob started learning to play the violin.", "D2:1"), // states it
		// Restates D2:3 ("My favourite food is grilled sardines, so I must visit you.") whole:
		// but that turn has fewer content tokens than the restate rule's minimum.
		mem("My favourite food is grilled sardines, so I must visit you.", "D2:3"),
	}
	var trace []extractionTraceLine
	got := scoreExtraction(c, mems, func(l extractionTraceLine) { trace = append(trace, l) })
	want := extractionCounts{observations: 7, memories: 5, sourced: 4, matched: 3, nearDup: 2, restate: 0}
	got.bestF1 = 0
	if got != want {
		t.Errorf("counts %+v, want %+v", got, want)
	}
	long := c
	long.turns = append([]locomoTurn(nil), c.turns...)
	long.turns[c.turnIndex["D2:3"]].Text = "My favourite food is grilled sardines with lemon, olive oil, fresh bread and a cold white wine by the sea in summer."
	r := scoreExtraction(long, []extractedMemory{mem(long.turns[c.turnIndex["D2:3"]].Text, "D2:3")}, nil)
	if r.restate != 1 {
		t.Errorf("a memory that is its long source turn word for word: restate %d, want 1", r.restate)
	}
	if len(trace) != 7 {
		t.Fatalf("%d trace lines, want one per observation (7)", len(trace))
	}
	matched, sourced := 0, 0
	for _, l := range trace {
		if l.Matched {
			matched++
		}
		if l.Sourced > 0 {
			sourced++
			if l.Best == "" || len(l.Turns) == 0 {
				t.Errorf("a sourced observation's line names no best memory or turn: %+v", l)
			}
		} else if l.Best != "" || l.BestF1 != 0 {
			t.Errorf("an observation with no memory at its turn has a best memory: %+v", l)
		}
	}
	if matched != want.matched || sourced != want.sourced {
		t.Errorf("trace: %d matched, %d sourced; want %d, %d", matched, sourced, want.matched, want.sourced)
	}
	if l := trace[0]; l.Best != "Alice moved to Lisbon last month." || l.BestF1 != 1 || len(l.Others) != 1 {
		t.Errorf("first observation's line %+v, want the exact memory at F1 1 and its near-duplicate among the others", l)
	}
	rep := got.report("conv")
	if rep.SourcedShare != 0.5714 || rep.MatchedShare != 0.4286 || rep.MemoriesPerObservation != 0.7143 || rep.NearDuplicateShare != 0.4 {
		t.Errorf("report %+v", rep)
	}
}

// TestEvalExtractionSmoke runs --extraction end to end on the tiny conversation through the
// in-process membus: a line per conversation and the pooled one, shares in [0, 1], and the
// heuristic extractor finds the plain facts at their turns.
func TestEvalExtractionSmoke(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	convs := tinyConvs(t)
	var notes bytes.Buffer
	res, err := evalLocomo(ctx, convs, evalParams{sync: "interval", embedder: "hash", extraction: true, notes: &notes})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.recall) != 0 || len(res.extraction) != 2 || res.extraction[1].Conversation != "all" {
		t.Fatalf("extraction reports %+v (recall %d), want the conversation and all", res.extraction, len(res.recall))
	}
	all := res.extraction[1]
	if all.Observations != 7 || all.Memories == 0 || all.Extractor != "heuristic" {
		t.Errorf("pooled report %+v", all)
	}
	for _, v := range []float64{all.SourcedShare, all.MatchedShare, all.MeanBestF1, all.NearDuplicateShare, all.RestateShare} {
		if v < 0 || v > 1 {
			t.Errorf("a share out of [0, 1]: %+v", all)
		}
	}
	if all.SourcedShare < 0.5 {
		t.Errorf("sourced share %.3f: the heuristic extractor should source memories at most of these plain facts' turns", all.SourcedShare)
	}
	var out bytes.Buffer
	if err := writeExtractionJSON(&out, res.extraction); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d JSON lines, want 2", len(lines))
	}
	var line map[string]any
	if err := json.Unmarshal([]byte(lines[1]), &line); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"eval", "conversation", "observations", "memories", "sourced_share", "matched_share", "mean_best_f1",
		"memories_per_observation", "near_duplicate_share", "restate_share", "extractor", "embedder"} {
		if _, ok := line[k]; !ok {
			t.Errorf("JSON line has no %q: %s", k, lines[1])
		}
	}
}

// TestEvalExtractionLLM: with --llm-base-url the eval extracts through the model. A stub
// OpenAI-compatible server answers every batch with one memory per message, the message's
// text in the third person, sourced at it: every observation is then sourced, and the
// report names the model.
func TestEvalExtractionLLM(t *testing.T) {
	line := regexp.MustCompile(`(?m)^\[id=([^\]]+)\] \w+ \(([^)]*)\) at \S+: (.*)$`)
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Messages []struct{ Content string } `json:"messages"`
		}
		if r.URL.Path != "/v1/chat/completions" || json.NewDecoder(r.Body).Decode(&req) != nil || len(req.Messages) == 0 {
			http.Error(w, "unexpected request", http.StatusBadRequest)
			return
		}
		calls.Add(1)
		var mems []map[string]any
		for _, m := range line.FindAllStringSubmatch(req.Messages[len(req.Messages)-1].Content, -1) {
			text := strings.NewReplacer("I ", m[2]+" ", "my ", m[2]+"'s ").Replace(m[3])
			mems = append(mems, map[string]any{"category": "fact", "scope": "user", "subject": m[2], "value": text,
				"text": text, "importance": 0.5, "sources": []string{m[1]}})
		}
		content, _ := json.Marshal(map[string]any{"memories": mems})
		_ = json.NewEncoder(w).Encode(map[string]any{"choices": []map[string]any{{"message": map[string]any{"role": "assistant", "content": string(content)}}}})
	}))
	defer srv.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	convs := tinyConvs(t)
	var notes bytes.Buffer
	res, err := evalLocomo(ctx, convs, evalParams{sync: "interval", embedder: "hash", extraction: true, notes: &notes,
		llmBaseURL: srv.URL + "/v1", llmModel: "stub"})
	if err != nil {
		t.Fatal(err)
	}
	all := res.extraction[len(res.extraction)-1]
	if calls.Load() == 0 {
		t.Fatal("the model was never asked")
	}
	if all.Extractor != "llm:stub" || all.SourcedShare != 1 || all.Memories == 0 {
		t.Errorf("report %+v: want the stub model named and every observation sourced", all)
	}
}

func tinyConvs(t *testing.T) []locomoConv {
	t.Helper()
	convs, err := loadLocomo(filepath.Join("testdata", "locomo-tiny.json"))
	if err != nil {
		t.Fatal(err)
	}
	return convs
}
