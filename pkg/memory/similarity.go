package memory

import (
	"cmp"
	"strings"
	"time"

	"github.com/membus/membus/pkg/embed"
)

// Near-duplicate thresholds (docs/design.md §6 "Conflicts first, then dedup").
const (
	JaccardDuplicate     = 0.7
	LevenshteinDuplicate = 0.8
	CosineDuplicate      = 0.92
	// levenshteinMaxRunes bounds the quadratic edit distance; longer texts rely on the other checks.
	levenshteinMaxRunes = 600
)

// Reasons a near-duplicate check matched (extract's decision metric and the dedup sweep use
// the same names).
const (
	DupExact       = "exact"       // same normalised text
	DupContainment = "containment" // one text contains the other
	DupJaccard     = "jaccard"     // token Jaccard ≥ 0.7
	DupLevenshtein = "levenshtein" // Levenshtein similarity ≥ 0.8
	DupCosine      = "cosine"      // dense cosine ≥ 0.92
	DupSameFact    = "same_fact"   // the same slot and value, or the same content words, in any category (SameFact)
)

// Comparable is what the near-duplicate rules look at of a memory.
type Comparable struct {
	Scope, Category           string
	Subject, Attribute, Value string
	Polarity                  int
	Text, ContentHash         string
	Embedding                 []float32
	EventDay                  string // an event's day, 2006-01-02; "" for other memories
	// DupCosine is the embedding model's near-duplicate cosine (embed.DuplicateCosine; the
	// candidate's is used), 0 for CosineDuplicate.
	DupCosine float64
}

// EventDay is the day an event happened, as Comparable.EventDay holds it.
func EventDay(category string, t *time.Time) string {
	if category != Event || t == nil {
		return ""
	}
	return t.UTC().Format("2006-01-02")
}

// NearDuplicate reports whether candidate says the same thing as existing, and which check
// matched. In any category: the same normalised text (content hash) or the same fact
// (SameFact: the same slot and value, or the same content words — "Blue is my favorite color"
// and "my favourite colour is blue"). In the same scope and category, between two memories
// without a slot: containment, token Jaccard ≥ 0.7, Levenshtein similarity ≥ 0.8 or dense
// cosine ≥ 0.92 — unless each text has a content word the other lacks (Substituted: "ships on
// Fridays" is not "ships on Mondays", however close the rest). Two memories that fill different
// slots (or the same slot with different values) are never near-duplicates, however similar
// their words ("likes cats" is not "likes bats"), and a memory with a slot is joined only by
// the same fact: the slot is the key, similarity does not override it. The same-id check and
// conflicts (same slot, new value) are the caller's, and come first.
func NearDuplicate(existing, candidate Comparable) (string, bool) {
	if existing.Scope != candidate.Scope {
		return "", false
	}
	sameDay := existing.EventDay == "" || candidate.EventDay == "" || existing.EventDay == candidate.EventDay
	if existing.ContentHash == candidate.ContentHash && existing.Category == candidate.Category && sameDay {
		return DupExact, true
	}
	if SameFact(existing, candidate) {
		return DupSameFact, true
	}
	if existing.Category != candidate.Category || existing.Attribute != "" || candidate.Attribute != "" || !sameDay {
		return "", false
	}
	if Substituted(existing.Text, candidate.Text) {
		return "", false
	}
	en, norm := Normalize(existing.Text), Normalize(candidate.Text)
	switch {
	case len(norm) > 20 && len(en) > 20 && (strings.Contains(en, norm) || strings.Contains(norm, en)):
		return DupContainment, true
	case Jaccard(en, norm) >= JaccardDuplicate:
		return DupJaccard, true
	case LevenshteinSimilarity(en, norm) >= LevenshteinDuplicate:
		return DupLevenshtein, true
	case len(existing.Embedding) > 0 && len(existing.Embedding) == len(candidate.Embedding) &&
		float64(embed.Cosine(existing.Embedding, candidate.Embedding)) >= cmp.Or(candidate.DupCosine, CosineDuplicate):
		return DupCosine, true
	}
	return "", false
}

// LevenshteinSimilarity is 1 − edit distance / the longer length, over runes; 0 when the
// lengths alone rule out a match or the texts are too long to compare cheaply.
func LevenshteinSimilarity(a, b string) float64 {
	ra, rb := []rune(a), []rune(b)
	if len(ra) < len(rb) {
		ra, rb = rb, ra
	}
	if len(ra) == 0 {
		return 1
	}
	if len(ra) > levenshteinMaxRunes || float64(len(rb))/float64(len(ra)) < LevenshteinDuplicate {
		return 0
	}
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return 1 - float64(prev[len(rb)])/float64(len(ra))
}

// Jaccard is the token Jaccard similarity of two whitespace-separated texts.
func Jaccard(a, b string) float64 {
	ta, tb := map[string]bool{}, map[string]bool{}
	for _, w := range strings.Fields(a) {
		ta[w] = true
	}
	for _, w := range strings.Fields(b) {
		tb[w] = true
	}
	if len(ta) == 0 || len(tb) == 0 {
		return 0
	}
	inter := 0
	for w := range ta {
		if tb[w] {
			inter++
		}
	}
	return float64(inter) / float64(len(ta)+len(tb)-inter)
}
