package embed

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// ErrVocab: a WordPiece vocabulary lacks a special token or is empty.
var ErrVocab = errors.New("embed: bad wordpiece vocabulary")

// maxWordChars is BERT's max_input_chars_per_word: longer words become [UNK].
const maxWordChars = 100

// WordPiece is BERT's tokenizer: the basic tokenizer (clean control characters, space
// out CJK ideographs, optional lower-casing with accent stripping, split on whitespace
// and punctuation) followed by greedy longest-match-first WordPiece with "##"
// continuation pieces. It is read-only after NewWordPiece and safe for concurrent use.
type WordPiece struct {
	vocab     map[string]int64
	tokens    []string // by id
	lowercase bool
	unk       int64
	cls       int64
	sep       int64
	pad       int64
}

// NewWordPiece reads a vocab.txt (one token a line; the line number is the id). With
// lowercase the text is lower-cased and its accents stripped, as uncased BERT models
// need.
func NewWordPiece(r io.Reader, lowercase bool) (*WordPiece, error) {
	vocab := make(map[string]int64, 32000)
	var tokens []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	var id int64
	for sc.Scan() {
		tok := strings.TrimRight(sc.Text(), "\r")
		if _, dup := vocab[tok]; !dup {
			vocab[tok] = id
		}
		tokens = append(tokens, tok)
		id++
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read vocabulary: %w", err)
	}
	w := &WordPiece{vocab: vocab, tokens: tokens, lowercase: lowercase}
	for _, s := range []struct {
		tok string
		id  *int64
	}{{"[UNK]", &w.unk}, {"[CLS]", &w.cls}, {"[SEP]", &w.sep}, {"[PAD]", &w.pad}} {
		v, ok := vocab[s.tok]
		if !ok {
			return nil, fmt.Errorf("%w: no %s token among %d", ErrVocab, s.tok, len(vocab))
		}
		*s.id = v
	}
	return w, nil
}

// PadID is the id of [PAD].
func (w *WordPiece) PadID() int64 { return w.pad }

// Encode returns [CLS] + the WordPiece ids of text + [SEP], at most maxLen ids in all
// (the text's pieces are truncated; maxLen below 2 is taken as 2).
func (w *WordPiece) Encode(text string, maxLen int) []int64 {
	ids, _ := w.encode(text, maxLen, false)
	return ids
}

// EncodeWords is Encode that also returns, for each id, the word of text it is a piece of
// (as the basic tokenizer splits and, for an uncased vocabulary, lower-cases it; "" for
// [CLS] and [SEP]). A caller masks whole words by them.
func (w *WordPiece) EncodeWords(text string, maxLen int) (ids []int64, words []string) {
	return w.encode(text, maxLen, true)
}

func (w *WordPiece) encode(text string, maxLen int, withWords bool) (ids []int64, words []string) {
	maxLen = max(maxLen, 2)
	ids = make([]int64, 0, min(maxLen, len(text)/3+2))
	ids = append(ids, w.cls)
	if withWords {
		words = append(words, "")
	}
	room := maxLen - 2
	for _, word := range w.basic(text) {
		if room <= 0 {
			break
		}
		for _, id := range w.pieces(word) {
			if room <= 0 {
				break
			}
			ids = append(ids, id)
			if withWords {
				words = append(words, word)
			}
			room--
		}
	}
	if withWords {
		words = append(words, "")
	}
	return append(ids, w.sep), words
}

// Tokens returns the WordPiece tokens of text, without [CLS] and [SEP] (for tests and
// debugging).
func (w *WordPiece) Tokens(text string) []string {
	var out []string
	for _, word := range w.basic(text) {
		for _, id := range w.pieces(word) {
			out = append(out, w.tokens[id])
		}
	}
	return out
}

// basic is BERT's BasicTokenizer: words and single punctuation characters.
func (w *WordPiece) basic(text string) []string {
	var b strings.Builder
	b.Grow(len(text) + 8)
	for _, r := range text {
		switch {
		case r == 0 || r == unicode.ReplacementChar || isControl(r):
		case isWhitespace(r):
			b.WriteByte(' ')
		case isCJK(r):
			b.WriteByte(' ')
			b.WriteRune(r)
			b.WriteByte(' ')
		default:
			b.WriteRune(r)
		}
	}
	var words []string
	for _, tok := range strings.Fields(b.String()) {
		if w.lowercase {
			tok = stripAccents(strings.ToLower(tok))
		}
		start := 0
		for i, r := range tok {
			if !isPunct(r) {
				continue
			}
			if start < i {
				words = append(words, tok[start:i])
			}
			n := i + len(string(r))
			words = append(words, tok[i:n])
			start = n
		}
		if start < len(tok) {
			words = append(words, tok[start:])
		}
	}
	return words
}

// pieces is greedy longest-match-first WordPiece of one word; a word with a part not in
// the vocabulary, or longer than maxWordChars, is [UNK].
func (w *WordPiece) pieces(word string) []int64 {
	runes := []rune(word)
	if len(runes) > maxWordChars {
		return []int64{w.unk}
	}
	var out []int64
	for start := 0; start < len(runes); {
		end := len(runes)
		found := int64(-1)
		for ; end > start; end-- {
			sub := string(runes[start:end])
			if start > 0 {
				sub = "##" + sub
			}
			if id, ok := w.vocab[sub]; ok {
				found = id
				break
			}
		}
		if found < 0 {
			return []int64{w.unk}
		}
		out = append(out, found)
		start = end
	}
	return out
}

// stripAccents drops combining marks after NFD, as BERT's _run_strip_accents.
func stripAccents(s string) string {
	isASCII := true
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			isASCII = false
			break
		}
	}
	if isASCII {
		return s
	}
	var b strings.Builder
	for _, r := range norm.NFD.String(s) {
		if unicode.Is(unicode.Mn, r) {
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

func isWhitespace(r rune) bool {
	return r == ' ' || r == '\t' || r == '\n' || r == '\r' || unicode.Is(unicode.Zs, r)
}

func isControl(r rune) bool {
	if r == '\t' || r == '\n' || r == '\r' {
		return false
	}
	return unicode.In(r, unicode.Cc, unicode.Cf)
}

// isPunct is BERT's _is_punctuation: every non-alphanumeric ASCII printable character,
// and Unicode punctuation.
func isPunct(r rune) bool {
	if (r >= 33 && r <= 47) || (r >= 58 && r <= 64) || (r >= 91 && r <= 96) || (r >= 123 && r <= 126) {
		return true
	}
	return unicode.IsPunct(r)
}

// isCJK is BERT's _is_chinese_char: the CJK Unified Ideographs blocks.
func isCJK(r rune) bool {
	return (r >= 0x4E00 && r <= 0x9FFF) || (r >= 0x3400 && r <= 0x4DBF) || (r >= 0x20000 && r <= 0x2A6DF) ||
		(r >= 0x2A700 && r <= 0x2B73F) || (r >= 0x2B740 && r <= 0x2B81F) || (r >= 0x2B820 && r <= 0x2CEAF) ||
		(r >= 0xF900 && r <= 0xFAFF) || (r >= 0x2F800 && r <= 0x2FA1F)
}
