package recall

import (
	"math/rand/v2"
	"strings"
	"testing"
)

func TestOverlapTerms(t *testing.T) {
	q := termSet("Which cello did Alice play at the concerts?") // alice, cello, concert, plai ("which" is a stop word)
	cases := []struct {
		name, text string
		want       float64
	}{
		{"no shared term", "Bob cooks pasta", 0},
		{"a repeated term counts once", "cello cello cello", 0.25},
		{"stems and case match", "ALICE plays a Concert", 0.75},
		{"stop words are no terms", "which did the at", 0},
		{"every term, and others", "alice which cello play concert in Denver", 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := overlapTerms(q, c.text); !near(got, c.want) {
				t.Fatalf("overlapTerms(%q) = %v, want %v (query terms %v)", c.text, got, c.want, q)
			}
		})
	}
	if got := overlapTerms(map[string]bool{}, "alice"); got != 0 {
		t.Fatalf("empty query: %v, want 0", got)
	}
}

// BenchmarkOverlapTerms is the keyword-overlap boost of recall's candidates: one query against
// 90 memory texts, as one recall scores them.
func BenchmarkOverlapTerms(b *testing.B) {
	words := strings.Fields("alice bob likes visited moved cello guitar denver boston garden kitchen python database weekend summer dog cat novel marathon hiking sister friend")
	r := rand.New(rand.NewPCG(1, 2))
	texts := make([]string, 90)
	for i := range texts {
		ws := make([]string, 6+r.IntN(8))
		for j := range ws {
			ws[j] = words[r.IntN(len(words))]
		}
		texts[i] = "Alice " + strings.Join(ws, " ")
	}
	q := termSet("what does alice like in denver on the weekend")
	for b.Loop() {
		for _, t := range texts {
			overlapTerms(q, t)
		}
	}
}
