package memory

import (
	"strings"
	"unicode"

	"github.com/membus/membus/pkg/vector"
)

// One fact, one memory (issue 17). Two memories state the same fact when they fill the same
// slot — subject and attribute — with the same value and polarity, in whatever words and
// category; or, when one of them has no slot, when they are made of the same content words.
// Words are compared in a canonical form: lower-cased, British spellings folded into American
// ones by suffix rules ("colour", "favourite", "theatre", "organise" → "color", "favorite",
// "theater", "organize"), inflections stemmed (vector.Stem: "ships" → "ship"), and the words that
// carry no fact dropped (articles, forms of be/have/do, the possessive 's, "you", and fillers
// such as "just", "really", "honestly"). Negation is kept ("doesn't" → "not"), and so are
// prepositions, numbers, names and modal verbs: "moved to Boston" is not "moved from Boston".

// factStopWords carry no fact of their own.
var factStopWords = wordSet(`a an the is are was were be been being am do does did doing has have had having s
	don doesn didn isn aren wasn weren haven hasn hadn ve re ll d m
	you your yours it its them they their this that these those
	just really actually honestly basically definitely truly totally seriously absolutely literally
	currently still also so well oh hi hey hello yeah yes ok okay anyway btw`)

// FactWords are the canonical content words of s, in order (see above).
func FactWords(s string) []string {
	var out []string
	for _, w := range strings.Fields(Normalize(strings.ReplaceAll(s, "’", "'"))) {
		if w == "t" { // "doesn't" normalises to "doesn t"
			w = "not"
		}
		if factStopWords[w] {
			continue
		}
		out = append(out, vector.Stem(foldSpelling(w)))
	}
	return out
}

// FactPhrase is FactWords joined by single spaces: the canonical form of a subject, an
// attribute or a value ("the theatre" and "theater" are both "theater").
func FactPhrase(s string) string { return strings.Join(FactWords(s), " ") }

// SameSlot reports whether two memories fill the same slot: the same subject and attribute
// (canonical words), both non-empty attributes.
func SameSlot(a, b Comparable) bool {
	return a.Attribute != "" && b.Attribute != "" && FactPhrase(a.Subject) == FactPhrase(b.Subject) &&
		FactPhrase(a.Attribute) == FactPhrase(b.Attribute)
}

// SameFact reports whether two memories of one scope state the same fact, whatever their
// category: the same slot with the same value and polarity, or — when either has no slot — the
// same set of content words (at least two). Two events of different days are different facts.
func SameFact(a, b Comparable) bool {
	if a.Scope != b.Scope || (a.EventDay != "" && b.EventDay != "" && a.EventDay != b.EventDay) {
		return false
	}
	if a.Attribute != "" && b.Attribute != "" {
		return SameSlot(a, b) && FactPhrase(a.Value) == FactPhrase(b.Value) && a.Polarity == b.Polarity
	}
	wa, wb := factWordSet(a.Text), factWordSet(b.Text)
	if len(wa) < 2 || len(wa) != len(wb) {
		return false
	}
	for w := range wa {
		if !wb[w] {
			return false
		}
	}
	return true
}

// Substituted reports whether each text names a value the other lacks — a number, or a
// capitalised word that does not start a sentence (a name, a place, a day) — typos aside (a
// word within Levenshtein similarity 0.8 of one on the other side is the same word): "ships on
// Fridays" and "ships on Mondays" state a changed value, which no similarity of the rest of
// the words makes the same fact. A value only added ("the team ships every Friday") is no
// substitution, and neither is a change of common words ("keep you posted", "keep you
// updated"), which the similarity rules judge.
func Substituted(a, b string) bool {
	return unmatched(valueWords(a), factWordSet(b)) && unmatched(valueWords(b), factWordSet(a))
}

// unmatched reports whether values has a word that neither is in words nor is a typo of one.
func unmatched(values, words map[string]bool) bool {
	for w := range values {
		if words[w] {
			continue
		}
		near := false
		for v := range words {
			if LevenshteinSimilarity(w, v) >= LevenshteinDuplicate {
				near = true
				break
			}
		}
		if !near {
			return true
		}
	}
	return false
}

// valueWords are the canonical forms of the words of s that name a value: numbers, and
// capitalised words other than a sentence's first and "I".
func valueWords(s string) map[string]bool {
	set := map[string]bool{}
	start := true
	var word []rune
	flush := func() {
		if len(word) == 0 {
			return
		}
		w := string(word)
		value := strings.ContainsFunc(w, unicode.IsDigit) || (!start && unicode.IsUpper(word[0]) && w != "I")
		if value {
			for _, fw := range FactWords(w) {
				set[fw] = true
			}
		}
		word, start = word[:0], false
	}
	for _, r := range s {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			word = append(word, r)
		case r == '\'' || r == '’':
			flush()
			start = false
		default:
			flush()
			if r == '.' || r == '!' || r == '?' || r == '\n' {
				start = true
			}
		}
	}
	flush()
	return set
}

func factWordSet(s string) map[string]bool {
	set := map[string]bool{}
	for _, w := range FactWords(s) {
		set[w] = true
	}
	return set
}

// Spelling folds: a British core, its American form, the suffixes it may carry and the
// shortest stem before it. "our" needs three letters before it so "four", "hour" and "your"
// stay; "ise" four, so "rise", "wise" and "noise" stay.
var spellingFolds = []struct {
	british, american string
	tails             []string
	minStem           int
}{
	{"our", "or", []string{"", "s", "ed", "ing", "ite", "ites", "ful", "able", "ably", "er", "ers", "less"}, 3},
	{"is", "iz", []string{"e", "es", "ed", "er", "ers", "ing", "ation", "ations"}, 4},
	{"ys", "yz", []string{"e", "es", "ed", "er", "ers", "ing"}, 3},
	{"tre", "ter", []string{"", "s"}, 2},
}

// foldSpelling rewrites a British spelling of a lower-case word to the American one.
func foldSpelling(w string) string {
	for _, f := range spellingFolds {
		for _, tail := range f.tails {
			core := f.british + tail
			if !strings.HasSuffix(w, core) || len(w)-len(core) < f.minStem {
				continue
			}
			return w[:len(w)-len(core)] + f.american + tail
		}
	}
	return w
}
