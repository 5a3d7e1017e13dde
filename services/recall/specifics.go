package recall

import (
	"regexp"
	"strings"

	"github.com/membus/membus/pkg/contract"
)

// A question that asks which things ("What books has John read?", "Which cities has Tim
// been to?") is answered by the items that name them: a title, a place, a brand. The items
// that only restate the question ("John is reading a book that they enjoy") match it as
// well by words and by meaning, and without this they fill the top of the list
// (docs/recall-quality.md, issue 18's specifics round).
var (
	listQuestionStart = regexp.MustCompile(`(?i)^\s*(what|which)\b`)
	notAList          = regexp.MustCompile(`(?i)^\s+(is|was|did|does|do)\b`)
)

// specificsWeight is added, after the lift, to a candidate of a list question for the names
// it holds that the question does not (specifics): 0.15 × min(n, 3)/3. Measured on one ingest
// of LoCoMo's dev split with cross-validation over its conversations
// (docs/recall-quality.md, issue 18's specifics round).
const (
	specificsWeight = 0.15
	specificsCap    = 3
)

// notSpecific are capitalised words that name nothing: the pronoun I and its contractions,
// and the function words that start a clause after a comma or a quote.
var notSpecific = wordSet(`a an the and or of to in on at for with is are was were be been did do does what when
	where who whom which why how i you he she it we they his her their my your our its that this these those as by
	from about has have had i'm i've i'll i'd`)

func wordSet(words string) map[string]bool {
	set := map[string]bool{}
	for _, w := range strings.Fields(words) {
		set[w] = true
	}
	return set
}

// listQuestion reports whether query asks "what …" or "which …" of things, not "what is",
// "what was", "what did", "what does" or "what do".
func listQuestion(query string) bool {
	loc := listQuestionStart.FindStringIndex(query)
	return loc != nil && !notAList.MatchString(query[loc[1]:])
}

// specifics counts the distinct capitalised words of text that do not start a sentence and
// that the query does not hold (its words lower-cased in q), up to specificsCap. A leading
// "Speaker: " is not counted. The names the question asks about are in q, so only the other
// names count: the ones that may answer it. A word is an ASCII letter followed by letters,
// apostrophes and hyphens; recall scans every candidate of a list question, so this is a
// plain loop over the bytes, without a regular expression or an allocation per word.
func specifics(q map[string]bool, text string) int {
	body := text[speakerPrefix(text):]
	var seen [specificsCap]string
	n := 0
	var lower []byte
	start := true // the next word starts a sentence
	for i := 0; i < len(body) && n < specificsCap; {
		if !isLetter(body[i]) {
			switch c := body[i]; {
			case c == '.' || c == '!' || c == '?' || c == ':':
				start = true
			case c == ' ' || c == '"' || c == '\'' || c == '(' || c == '[':
			case strings.HasPrefix(body[i:], "“") || strings.HasPrefix(body[i:], "‘"):
				i += len("“") // both are three bytes
				continue
			default:
				start = false
			}
			i++
			continue
		}
		j := wordEnd(body, i)
		if w := body[i:j]; isUpper(w[0]) && !start {
			lower = appendLower(lower[:0], w)
			if !notSpecific[string(lower)] && !q[string(lower)] && !seenWord(seen[:n], lower) {
				seen[n] = string(lower)
				n++
			}
		}
		start = false
		i = j
	}
	return n
}

// speakerPrefix is the length of a leading "Name: " (an archive line's speaker), or 0.
func speakerPrefix(text string) int {
	if text == "" || !isUpper(text[0]) {
		return 0
	}
	i := 1
	for i < len(text) && (isLetter(text[i]) || text[i] >= '0' && text[i] <= '9' || text[i] == '_' || text[i] == '\'' || text[i] == '-') {
		i++
	}
	if strings.HasPrefix(text[i:], ": ") {
		return i + 2
	}
	return 0
}

// wordEnd is the end of the word that starts at i: letters, apostrophes (' and ’) and hyphens.
func wordEnd(s string, i int) int {
	for i++; i < len(s); {
		switch {
		case isLetter(s[i]) || s[i] == '\'' || s[i] == '-':
			i++
		case strings.HasPrefix(s[i:], "’"):
			i += len("’")
		default:
			return i
		}
	}
	return i
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

func isUpper(c byte) bool { return c >= 'A' && c <= 'Z' }

// appendLower appends w lower-cased (ASCII letters; ’ and the rest as they are) to dst.
func appendLower(dst []byte, w string) []byte {
	for i := 0; i < len(w); i++ {
		c := w[i]
		if isUpper(c) {
			c += 'a' - 'A'
		}
		dst = append(dst, c)
	}
	return dst
}

func seenWord(seen []string, w []byte) bool {
	for _, s := range seen {
		if s == string(w) {
			return true
		}
	}
	return false
}

// questionWords are the query's words, lower-cased, as specifics reads words.
func questionWords(query string) map[string]bool {
	q := map[string]bool{}
	for i := 0; i < len(query); {
		if !isLetter(query[i]) {
			i++
			continue
		}
		j := wordEnd(query, i)
		q[string(appendLower(nil, query[i:j]))] = true
		i = j
	}
	return q
}

// addSpecifics adds specificsWeight × min(specifics, 3)/3 to each candidate when query is a
// list question, carried in its boost. An archive point's text holds the turn before it on
// its second line: only its own first line counts.
func addSpecifics(cands []candidate, query string) {
	if !listQuestion(query) {
		return
	}
	q := questionWords(query)
	for i := range cands {
		c := &cands[i]
		text := c.text
		if c.kind == contract.KindArchive {
			text, _, _ = strings.Cut(text, "\n")
		}
		add := specificsWeight * float64(specifics(q, text)) / specificsCap
		c.parts.Boost += add
		c.score += add
	}
}
