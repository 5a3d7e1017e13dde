package recall

import (
	"math"
	"strings"
	"unicode"
)

// namesBlind is the query without the capitalised words after its first: in a question about
// a person ("What books has Melanie read?") the name weighs as much in the query's embedding
// as the topic, and every turn said by or to that person matches it. recall searches with the
// query's vector blended with this one's (blendQuery), so the topic counts for more. The
// first word is kept: it is capitalised because it starts the question.
func namesBlind(query string) string {
	words := strings.Fields(query)
	kept := make([]string, 0, len(words))
	for i, w := range words {
		if i > 0 && capitalised(w) {
			continue
		}
		kept = append(kept, w)
	}
	return strings.Join(kept, " ")
}

// capitalised reports whether w starts with an upper-case letter followed by a lower-case one
// ("Melanie", "Melanie's"; not "I", "LGBTQ" or "3D").
func capitalised(w string) bool {
	r := []rune(w)
	return len(r) > 1 && unicode.IsUpper(r[0]) && unicode.IsLower(r[1])
}

// blendQuery is the unit vector along q + w·blind.
func blendQuery(q, blind []float32, w float64) []float32 {
	out := make([]float32, len(q))
	norm := 0.0
	for i := range q {
		v := float64(q[i]) + w*float64(blind[i])
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
