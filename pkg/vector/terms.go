package vector

import (
	"strings"
	"unicode"
)

// stopWords are dropped from BM25 terms: the commonest English function
// words, which match everything and rank nothing.
var stopWords = map[string]bool{
	"a": true, "an": true, "and": true, "are": true, "as": true, "at": true,
	"be": true, "but": true, "by": true, "do": true, "for": true, "from": true,
	"has": true, "have": true, "he": true, "her": true, "his": true, "i": true,
	"if": true, "in": true, "into": true, "is": true, "it": true, "its": true,
	"me": true, "my": true, "no": true, "not": true, "of": true, "on": true,
	"or": true, "our": true, "she": true, "so": true, "that": true, "the": true,
	"their": true, "them": true, "then": true, "there": true, "these": true,
	"they": true, "this": true, "to": true, "was": true, "we": true, "were": true,
	"what": true, "when": true, "which": true, "who": true, "will": true,
	"with": true, "you": true, "your": true,
}

// Terms returns the BM25 terms of s: lower-cased runs of Unicode letters
// and digits, English stop words dropped. Han, Hiragana and Katakana
// characters, which are written without spaces, are one term each. Every
// adapter's sparse vectors use these terms, so keyword scores agree.
func Terms(s string) []string {
	var out []string
	var b strings.Builder
	flush := func() {
		if b.Len() == 0 {
			return
		}
		w := b.String()
		b.Reset()
		if !stopWords[w] {
			out = append(out, w)
		}
	}
	for _, r := range strings.ToLower(s) {
		switch {
		case unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana):
			flush()
			out = append(out, string(r))
		case unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r) && b.Len() > 0:
			b.WriteRune(r)
		default:
			flush()
		}
	}
	flush()
	return out
}
