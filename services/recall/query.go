package recall

import (
	"math"
	"strings"
	"unicode"

	"github.com/membus/membus/pkg/embed"
)

// queryNames are the names a query mentions: its capitalised words after the first, without
// a trailing possessive or punctuation, each once. recall searches with the query's vector
// moved away from theirs (awayFrom): in a question about a person ("What books has Melanie
// read?") the name weighs as much in the query's embedding as the topic, and every turn said
// by or to that person matches it. The first word is capitalised because it starts the query.
func queryNames(query string) []string {
	var names []string
	for i, w := range strings.Fields(query) {
		w = strings.TrimRightFunc(w, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
		w = strings.TrimSuffix(strings.TrimSuffix(w, "'s"), "’s")
		if i > 0 && capitalised(w) && !containsString(names, w) {
			names = append(names, w)
		}
	}
	return names
}

// capitalised reports whether w starts with an upper-case letter followed by a lower-case one
// ("Melanie"; not "I", "LGBTQ" or "3D").
func capitalised(w string) bool {
	r := []rune(w)
	return len(r) > 1 && unicode.IsUpper(r[0]) && unicode.IsLower(r[1])
}

// awayFrom is the unit vector along q − w·Σ names. The names' vectors come from the embedding
// cache once a name has been asked about, so a query pays no second model run for a person it
// names again. Should the sum cancel q, q is returned as it is.
func awayFrom(q []float32, names [][]float32, w float64) []float32 {
	out := make([]float32, len(q))
	norm := 0.0
	for i := range q {
		v := float64(q[i])
		for _, n := range names {
			v -= w * float64(n[i])
		}
		out[i] = float32(v)
		norm += v * v
	}
	if norm == 0 {
		return q
	}
	norm = math.Sqrt(norm)
	for i := range out {
		out[i] = float32(float64(out[i]) / norm)
	}
	return out
}

// learned reports whether e is a trained model rather than the feature-hashing embedder. Its
// vector of a text is the text's words hashed, which BM25 and the lexical overlap already
// count: moving the query away from a name's vector, and adding the dense part again after the
// lift, were measured for a model (e5-small-v2) and cost the hash embedder R@10 0.004 and
// 0.011 on LoCoMo's dev split (docs/recall-quality.md, issue 18's names round).
func learned(e embed.Embedder) bool {
	p, ok := e.(embed.Provider)
	return !ok || p.Provider() != "hash"
}
