package eval

import (
	"bytes"
	"math"
	"reflect"
	"strings"
	"testing"
)

func TestSentencesAndClauses(t *testing.T) {
	cases := []struct {
		in                  string
		sentences, clauses0 []string // clauses0: the clauses of the first sentence
	}{
		{"Hi Bob! I moved to Lisbon last month and I love it here.",
			[]string{"Hi Bob!", "I moved to Lisbon last month and I love it here."}, []string{"Hi Bob!"}},
		{"It was long, but worth it. Really?", []string{"It was long, but worth it.", "Really?"}, []string{"It was long", " ", " worth it."}},
		{"No end mark at all - just talk", []string{"No end mark at all - just talk"}, []string{"No end mark at all", "just talk"}},
		{"3.5 stars", []string{"3.5 stars"}, []string{"3.5 stars"}},
		{"", nil, nil},
	}
	for _, c := range cases {
		got := sentences(c.in)
		if !reflect.DeepEqual(got, c.sentences) {
			t.Errorf("sentences(%q) = %q, want %q", c.in, got, c.sentences)
		}
		if len(got) == 0 {
			continue
		}
		var want []string
		for _, p := range c.clauses0 {
			if strings.TrimSpace(p) != "" {
				want = append(want, p)
			}
		}
		if cl := clauses(got[0]); !reflect.DeepEqual(cl, want) {
			t.Errorf("clauses(%q) = %q, want %q", got[0], cl, want)
		}
	}
}

func TestBestSpanAndSubsetF1(t *testing.T) {
	cases := []struct {
		name               string
		obs, prefix, turn  string
		wantSpan, wantSubs float64
	}{
		{"the span that is the observation", "Dana bought a red bike", "Dana", "After the meeting downstairs I bought a red bike yesterday", 1, 6.0 / 7}, // the subset is of the turn alone, without the name,
		{"the prefix alone", "Dana", "Dana", "nothing shared here", 1, 0},
		{"words apart: one of them alone beats the span that carries what lies between", "violin Lisbon", "", "violin practice every evening Lisbon", 2.0 / 3, 1},
		{"a repeated word counts once per use", "dog dog", "", "dog cat dog", 0.8, 1},
		{"nothing shared", "sardines", "Dana", "violin", 0, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			obs, prefix, turn := bm25Tokens(c.obs), bm25Tokens(c.prefix), bm25Tokens(c.turn)
			if got := bestSpanF1(obs, prefix, turn); math.Abs(got-c.wantSpan) > 1e-9 {
				t.Errorf("bestSpanF1 = %v, want %v", got, c.wantSpan)
			}
			if got := subsetF1(obs, turn); math.Abs(got-c.wantSubs) > 1e-9 {
				t.Errorf("subsetF1 = %v, want %v", got, c.wantSubs)
			}
		})
	}
}

// TestExtractionBounds: three observations, each matched by a different set of shapes — the
// sentence is too long for one (a clause is not), only a span inside the one clause matches
// another, and the third paraphrases beyond the turn's words.
func TestExtractionBounds(t *testing.T) {
	turns := []locomoTurn{
		{Speaker: "Dana", DiaID: "D1:1", Text: "Honestly it has been such a long and tiring week at work, but yesterday I finally adopted a puppy named Rex from the shelter downtown."},
		{Speaker: "Dana", DiaID: "D1:2", Text: "Yesterday after the endless quarterly budget meeting with the entire regional finance team downstairs I bought a red bike."},
		{Speaker: "Dana", DiaID: "D1:3", Text: "Thanks so much, you guys are the best!"},
	}
	c := locomoConv{ID: "conv-t", turns: turns, turnIndex: map[string]int{"D1:1": 0, "D1:2": 1, "D1:3": 2}, Observations: []locomoObservation{
		{Text: "Dana adopted a puppy named Rex.", Evidence: []string{"D1:1"}},
		{Text: "Dana bought a red bike.", Evidence: []string{"D1:2"}},
		{Text: "Dana appreciates her friends' support.", Evidence: []string{"D1:3"}},
	}}
	got := boundsOf([]locomoConv{c})
	third, twoThirds := round4(1.0/3), round4(2.0/3)
	want := extractionBounds{Eval: "locomo-extraction-bounds", Conversation: "conv-t", Observations: 3,
		Sentence: 0, ClauseRuns: []float64{third, third, third}, Span: twoThirds, Subset: twoThirds}
	if len(got) != 2 || !reflect.DeepEqual(got[0], want) {
		t.Fatalf("bounds = %+v, want [%+v, all]", got, want)
	}
	if all := got[1]; all.Conversation != "all" || all.Span != want.Span || all.Observations != 3 {
		t.Errorf("all = %+v, want the one conversation pooled", all)
	}
	var table bytes.Buffer
	if err := writeBoundsTable(&table, got); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(table.String(), "≤3 clauses") || !strings.Contains(table.String(), "0.667") {
		t.Errorf("table:\n%s", table.String())
	}
}
