package vector

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// stopWords are dropped from BM25 terms: the commonest English function
// words, which match everything and rank nothing.
var stopWords = map[string]bool{
	"a": true, "about": true, "an": true, "and": true, "are": true, "as": true,
	"at": true, "be": true, "been": true, "but": true, "by": true, "did": true,
	"do": true, "does": true, "for": true, "from": true, "had": true,
	"has": true, "have": true, "he": true, "her": true, "his": true,
	"how": true, "i": true, "if": true, "in": true, "into": true, "is": true,
	"it": true, "its": true, "me": true, "my": true, "no": true, "not": true,
	"of": true, "on": true, "or": true, "our": true, "she": true, "so": true,
	"that": true, "the": true, "their": true, "them": true, "then": true,
	"there": true, "these": true, "they": true, "this": true, "to": true,
	"was": true, "we": true, "were": true, "what": true, "when": true,
	"where": true, "which": true, "who": true, "whom": true, "why": true,
	"will": true, "with": true, "you": true, "your": true,
}

// Terms returns the BM25 terms of s: lower-cased runs of Unicode letters
// and digits, English stop words dropped, a–z words reduced to their light
// stem (stem: "hikes", "hiked" and "hiking" are the term "hike"). Han,
// Hiragana and Katakana characters, which are written without spaces, are
// one term each. Every adapter's sparse vectors use these terms, so keyword
// scores agree.
func Terms(s string) []string {
	out := make([]string, 0, 8) // most texts have a few terms; a short one needs no growing
	EachTerm(s, func(t string) bool {
		out = append(out, t)
		return true
	})
	return out
}

// EachTerm calls yield with each term of s, in order, as Terms returns them, until yield
// returns false, without collecting them: recall takes the terms of every candidate's text on
// each request.
func EachTerm(s string, yield func(string) bool) {
	lower := strings.ToLower(s)
	// A word is a run of lower, so it is sliced out of it rather than copied rune by rune.
	start := -1 // byte offset of the word being read, -1 between words
	// flush yields the word ending at end, if any; false when the caller stopped.
	flush := func(end int) bool {
		if start < 0 {
			return true
		}
		w := lower[start:end]
		start = -1
		return stopWords[w] || yield(stem(w))
	}
	for i, r := range lower {
		if r < utf8.RuneSelf {
			// ASCII, the common case, without the Unicode tables: lower-cased, its letters
			// are a–z, and it holds no mark, Han or kana.
			if 'a' <= r && r <= 'z' || '0' <= r && r <= '9' {
				if start < 0 {
					start = i
				}
			} else if !flush(i) {
				return
			}
			continue
		}
		switch {
		case unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana):
			if !flush(i) || !yield(string(r)) {
				return
			}
		case unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r) && start >= 0:
			if start < 0 {
				start = i
			}
		default:
			if !flush(i) {
				return
			}
		}
	}
	flush(len(lower))
}

// Stem is the light stem of one lower-case word that Terms uses ("hikes", "hiked" and "hiking"
// are "hike"); pkg/memory compares the words of two memories with it.
func Stem(w string) string { return stem(w) }

// stem is a light English stemmer (steps 1a–1c of Porter's algorithm,
// porterStep1): plurals, -ed, -ing and a final -y. Words with characters
// outside a–z and words of up to three letters are kept as they are. A
// change here changes the terms of every document: the local store
// recomputes them when it loads; a Qdrant collection keeps the sparse
// vectors its points were written with until they are rewritten, so an old
// point's inflected words ("hiking") no longer match (the query term is
// "hike"); its uninflected words still do.
func stem(w string) string {
	if len(w) <= 3 {
		return w
	}
	for i := 0; i < len(w); i++ {
		if w[i] < 'a' || w[i] > 'z' {
			return w
		}
	}
	return porterStep1(w)
}

// porterStep1 applies steps 1a, 1b and 1c of Porter's stemming algorithm
// (M.F. Porter, 1980) to a lower-case a–z word. pkg/embed keeps its own
// copy, frozen with the hash-v2 embedder's features.
func porterStep1(w string) string {
	// Step 1a.
	switch {
	case strings.HasSuffix(w, "sses"):
		w = w[:len(w)-2]
	case strings.HasSuffix(w, "ies"):
		w = w[:len(w)-2]
	case strings.HasSuffix(w, "ss"):
	case strings.HasSuffix(w, "s"):
		w = w[:len(w)-1]
	}
	// Step 1b.
	tidy := false
	switch {
	case strings.HasSuffix(w, "eed"):
		if porterMeasure(w[:len(w)-3]) > 0 {
			w = w[:len(w)-1]
		}
	case strings.HasSuffix(w, "ed") && porterHasVowel(w[:len(w)-2]):
		w, tidy = w[:len(w)-2], true
	case strings.HasSuffix(w, "ing") && porterHasVowel(w[:len(w)-3]):
		w, tidy = w[:len(w)-3], true
	}
	if tidy {
		n := len(w)
		switch {
		case strings.HasSuffix(w, "at"), strings.HasSuffix(w, "bl"), strings.HasSuffix(w, "iz"):
			w += "e"
		case n >= 2 && w[n-1] == w[n-2] && porterConsonant(w, n-1) && w[n-1] != 'l' && w[n-1] != 's' && w[n-1] != 'z':
			w = w[:n-1]
		case porterMeasure(w) == 1 && porterCVC(w):
			w += "e"
		}
	}
	// Step 1c.
	if strings.HasSuffix(w, "y") && porterHasVowel(w[:len(w)-1]) {
		w = w[:len(w)-1] + "i"
	}
	return w
}

// porterConsonant reports whether w[i] is a consonant: not a, e, i, o, u,
// and y only when it follows a vowel (or starts the word).
func porterConsonant(w string, i int) bool {
	switch w[i] {
	case 'a', 'e', 'i', 'o', 'u':
		return false
	case 'y':
		return i == 0 || !porterConsonant(w, i-1)
	}
	return true
}

// porterMeasure is m in [C](VC){m}[V].
func porterMeasure(w string) int {
	m, i, n := 0, 0, len(w)
	for i < n && porterConsonant(w, i) {
		i++
	}
	for i < n {
		for i < n && !porterConsonant(w, i) {
			i++
		}
		if i == n {
			break
		}
		for i < n && porterConsonant(w, i) {
			i++
		}
		m++
	}
	return m
}

func porterHasVowel(w string) bool {
	for i := range len(w) {
		if !porterConsonant(w, i) {
			return true
		}
	}
	return false
}

// porterCVC reports whether w ends consonant–vowel–consonant, the last not
// w, x or y ("hop", not "snow").
func porterCVC(w string) bool {
	n := len(w)
	if n < 3 || !porterConsonant(w, n-1) || porterConsonant(w, n-2) || !porterConsonant(w, n-3) {
		return false
	}
	c := w[n-1]
	return c != 'w' && c != 'x' && c != 'y'
}
