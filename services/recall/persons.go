package recall

import (
	"context"
	"errors"
	"regexp"
	"strings"

	"github.com/membus/membus/pkg/embed"
	"github.com/membus/membus/pkg/vector"
)

// Per-person queries (issue 18). A question that names two of the user's speakers ("What
// pets do Audrey and Andrew both have?") is usually answered by a turn of each, and each of
// those turns matches one person's half of the question, not the whole. So the question runs
// once more per person, both in one batch: the same tokens, the other person's name (and
// "both", "and") masked out of the model's attention, so the model reads "What pets do Audrey
// have?". Each candidate then gains personWeight × (its scaled cosine with the better person's
// row − its scaled cosine with the question). Measured on
// LoCoMo's dev split (docs/recall-quality.md, the person round); the weight was picked in
// all five folds of a leave-one-conversation-out run over 0–1.
const personWeight = 0.6

// personDrops are the words masked out of a person's row beside the other person's name.
var personDrops = []string{"both", "and"}

// personWord is a word as the per-person screen split questions: a possessive ("Caroline's")
// is another word than the name.
var personWord = regexp.MustCompile(`[A-Za-z][A-Za-z'’-]*`)

// namedSpeakers are the speakers (as the session contexts name them) that query names by a
// capitalised word, in the order it first names them, once each.
func namedSpeakers(query string, contexts map[speakerSession]float64) []string {
	var out []string
	for _, w := range personWord.FindAllString(query, -1) {
		if !capitalised(w) || containsString(out, w) {
			continue
		}
		for k := range contexts {
			if strings.EqualFold(k.speaker, w) {
				out = append(out, w)
				break
			}
		}
	}
	return out
}

// personQueries returns q (the question's own vector, as asked) and one row per person when
// query names two of the speakers among contexts (the first two it names), else nil. The
// speakers come from the session contexts the question's search found: a user's speakers are
// the speakers of its archives, and a question naming one is near that person's contexts.
// The two persons' rows run as one batch of two, without the question's row: the question's
// own run already gave q, and a third row makes the batch about 2.7 ms slower for 0.001 of
// multi-hop (the person round measured both). An embedder that cannot mask (ErrNoMasking), or fails to, leaves recall
// without them: they refine the ranking, and failing them must not fail the recall.
func (s *Service) personQueries(ctx context.Context, query string, q []float32, contexts map[speakerSession]float64) [][]float32 {
	names := namedSpeakers(query, contexts)
	if len(names) < 2 {
		return nil
	}
	a, b := names[0], names[1]
	rows, err := embed.EmbedQueryMasked(ctx, s.d.Embedder, query, [][]string{append([]string{b}, personDrops...), append([]string{a}, personDrops...)})
	if err != nil {
		if !errors.Is(err, embed.ErrNoMasking) {
			s.log.Warn("embed the question per person: ranking without it", "err", err)
		}
		return nil
	}
	s.persons(1)
	return append([][]float32{q}, rows...)
}

// personScores scores the hits against the rows of personQueries: for each hit, the better
// person's scaled cosine less the question row's. A store that cannot score given points, or
// fails to, leaves recall without them (logged).
func (s *Service) personScores(ctx context.Context, account, user string, rows [][]float32, hits [][]vector.Hit) map[string]float64 {
	if len(rows) != 3 {
		return nil
	}
	sc, ok := s.d.Vectors.(vector.Scorer)
	if !ok {
		return nil
	}
	var ids []string
	seen := map[string]bool{}
	for h := range eachHit(hits) {
		if !seen[h.ID] {
			seen[h.ID] = true
			ids = append(ids, h.ID)
		}
	}
	cos, err := sc.Cosines(ctx, account, user, ids, rows)
	if err != nil {
		s.log.Warn("score the candidates per person: ranking without it", "err", err)
		return nil
	}
	scaled := func(c float64) float64 { return clamp01(embed.ScaleCosine(s.d.Embedder, c)) }
	out := make(map[string]float64, len(ids))
	for i, id := range ids {
		out[id] = max(scaled(cos[1][i]), scaled(cos[2][i])) - scaled(cos[0][i])
	}
	return out
}

// addPersons adds personWeight × a candidate's person score to its score, carried in its boost.
func addPersons(cands []candidate, persons map[string]float64) {
	for i := range cands {
		c := &cands[i]
		d := personWeight * persons[c.id]
		c.parts.Boost += d
		c.score += d
	}
}
