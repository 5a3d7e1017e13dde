package recall

import (
	"math"
	"sort"
	"strings"
	"time"

	"github.com/membus/membus/pkg/contract"
	"github.com/membus/membus/pkg/memory"
)

// Score scale (docs/design.md §6, "Recall"): dense cosine clamped to [0,1]; keyword BM25 divided by
// the best keyword score of the candidate set; fused = 0.7 dense + 0.3 keyword, or RRF; then
// the boosts; then the neighbouring-turn lift (neighbours.go, carried in the boost); then the
// question penalty of an archive message that asks (carried in the boost too); then the dense
// part once more (carried in the boost); then the specifics of a list question (specifics.go)
// and the session context of the candidate's speaker (session_context.go), both in the boost;
// then, when on, temporal decay. The dense part is the
// cosine with the query's vector moved away from those of the names it mentions (query.go).
const (
	denseWeight     = 0.7
	keywordWeight   = 0.3
	leafBoost       = 0.12
	temporalBoost   = 0.10
	preferenceBoost = 0.08
	// periodBoost: +0.2 when the query names a date and the item was said or happened then
	// (period.go; 0.05 / 0.1 / 0.2 / 0.3 measured R@10 0.771 / 0.776 / 0.779 / 0.779 on
	// LoCoMo's dev split, 0.768 without, docs/recall-quality.md).
	periodBoost     = 0.2
	maxLexicalBoost = 0.2
	// questionPenalty: −0.15, after the neighbouring-turn lift, for an archive message that
	// ends in a question mark (asksQuestion). It asks; the answer is in a turn near it, which
	// the lift has already raised from the question's own score. Cross-validated over LoCoMo's
	// dev conversations (docs/recall-quality.md, issue 18's fourth round).
	questionPenalty = 0.15
	// nameWeight: recall searches with the unit vector along q − 0.15·Σ n, q the query's vector
	// and n those of the names it mentions (queryNames). Both this and denseAfterLift apply
	// with a learned embedder only (learned, query.go). denseAfterLift: 0.4 × the candidate's
	// own dense part is added after the lift and the question penalty, so that a turn lifted by
	// its neighbour ranks by its own relevance too. Measured on one ingest of LoCoMo's dev split
	// (docs/recall-quality.md, issue 18's names round): nameWeight 0.15 is the best of
	// 0.05–0.3 over all five conversations with denseAfterLift 0.3 (every category at or above
	// the ranking without either; the leave-one-conversation-out folds picked 0.05–0.2); then
	// denseAfterLift 0.4 was picked in all five folds of 0.2–0.6 × the lift at 0.8 / 0.85 / 0.9
	// (the lift stays at 0.85).
	nameWeight     = 0.15
	denseAfterLift = 0.4

	// rrfK is the rank constant of reciprocal rank fusion.
	rrfK = 60
	// decayHalfLife and decayFloor: a candidate loses half its score every 30 days, never more
	// than half in all.
	decayHalfLife = 30 * 24 * time.Hour
	decayFloor    = 0.5
	// mmrLambda weighs relevance against novelty in MMR.
	mmrLambda = 0.7
)

// evergreen categories never decay: who someone is and what they like do not age.
var evergreen = map[string]bool{memory.Profile: true, memory.Preference: true, memory.Entity: true}

// weightedFusion is 0.7·dense + 0.3·keyword, both on [0,1].
func weightedFusion(dense, keyword float64) float64 {
	return denseWeight*dense + keywordWeight*keyword
}

// rrfFusion fuses by rank: 1/(k+rank) per side the candidate ranks on (1-based; 0 = not
// ranked on that side), divided by the best possible sum 2/(k+1), so the scale stays [0,1] and
// the threshold and boosts keep their meaning.
func rrfFusion(denseRank, keywordRank int) float64 {
	s := 0.0
	if denseRank > 0 {
		s += 1 / float64(rrfK+denseRank)
	}
	if keywordRank > 0 {
		s += 1 / float64(rrfK+keywordRank)
	}
	return s / (2 / float64(rrfK+1))
}

// ranks returns each candidate's 1-based rank by the value v (higher first; ties by index),
// 0 for a candidate whose v is 0 (it was not found on that side).
func ranks(n int, v func(i int) float64) []int {
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return v(idx[a]) > v(idx[b]) })
	out := make([]int, n)
	for r, i := range idx {
		if v(i) > 0 {
			out[i] = r + 1
		}
	}
	return out
}

// boostInput is what the rerank boosts look at.
type boostInput struct {
	kind, category       string
	temporal, preference bool    // the query asks about time / preferences
	overlap              float64 // share of the query's terms the text contains
	inPeriod             bool    // the query names a date and the item was said or happened then
}

// boost is the rerank boost: +0.12 for leaf items (memories and archive messages, not
// digests), +0.10 for events on temporal queries, +0.08 for preferences on preference queries,
// +0.2 for items said or happened in the period a query names ("on 3 June, 2023", "in May
// 2022"), and lexical overlap up to +0.2.
func boost(in boostInput) float64 {
	b := 0.0
	if in.kind != contract.KindDigest {
		b += leafBoost
	}
	if in.temporal && in.category == memory.Event {
		b += temporalBoost
	}
	if in.preference && in.category == memory.Preference {
		b += preferenceBoost
	}
	if in.inPeriod {
		b += periodBoost
	}
	return b + maxLexicalBoost*max(0, min(1, in.overlap))
}

// asksQuestion reports whether an archive point's text, "Name: content" and on a second line
// the turn before it (projection.withPreviousTurn), is a message that ends by asking: its
// first line ends in a question mark (ASCII or full-width).
func asksQuestion(text string) bool {
	first, _, _ := strings.Cut(text, "\n")
	first = strings.TrimSpace(first)
	return strings.HasSuffix(first, "?") || strings.HasSuffix(first, "？")
}

// addDenseAfterLift adds denseAfterLift × each candidate's dense part to its score, carried
// in its boost. The lift gives a neighbour of the best match 0.85 of that match's score
// whatever its own; this ranks the lifted turns, and every other candidate, by their own
// similarity as well.
func addDenseAfterLift(cands []candidate) {
	for i := range cands {
		c := &cands[i]
		c.parts.Boost += denseAfterLift * c.parts.Dense
		c.score += denseAfterLift * c.parts.Dense
	}
}

// penaliseQuestions lowers each archive candidate that asks a question (asksQuestion) by
// questionPenalty, carried in its boost. It runs after the neighbouring-turn lift: a question
// still lifts the reply next to it from its own score, and the reply, which states the
// answer, ranks above it.
func penaliseQuestions(cands []candidate) {
	for i := range cands {
		if c := &cands[i]; c.kind == contract.KindArchive && asksQuestion(c.text) {
			c.parts.Boost -= questionPenalty
			c.score -= questionPenalty
		}
	}
}

// decayFactor is the temporal decay multiplier of an item dated at, seen at now: 0.5^(age/30
// days), never below 0.5; 1 for evergreen categories, undated items and items from the future.
func decayFactor(category string, at, now time.Time) float64 {
	if evergreen[category] || at.IsZero() || !now.After(at) {
		return 1
	}
	f := math.Pow(0.5, float64(now.Sub(at))/float64(decayHalfLife))
	return max(decayFloor, f)
}

// mmrOrder reorders candidates (sorted by score, best first) by maximal marginal relevance:
// each next pick maximises λ·score − (1−λ)·(its highest similarity to an item already
// picked). sim(i, j) is a similarity on [0,1].
func mmrOrder(scores []float64, sim func(i, j int) float64) []int {
	n := len(scores)
	picked := make([]int, 0, n)
	used := make([]bool, n)
	maxSim := make([]float64, n)
	for len(picked) < n {
		best, bestVal := -1, math.Inf(-1)
		for i := 0; i < n; i++ {
			if used[i] {
				continue
			}
			v := mmrLambda*scores[i] - (1-mmrLambda)*maxSim[i]
			if v > bestVal {
				best, bestVal = i, v
			}
		}
		used[best] = true
		picked = append(picked, best)
		for i := 0; i < n; i++ {
			if !used[i] {
				maxSim[i] = max(maxSim[i], sim(best, i))
			}
		}
	}
	return picked
}

// jaccard is the Jaccard similarity of two term sets.
func jaccard(a, b map[string]bool) float64 {
	if len(a) == 0 && len(b) == 0 {
		return 0
	}
	inter := 0
	for t := range a {
		if b[t] {
			inter++
		}
	}
	return float64(inter) / float64(len(a)+len(b)-inter)
}
