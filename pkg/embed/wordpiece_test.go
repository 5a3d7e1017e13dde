package embed

import (
	"os"
	"slices"
	"strings"
	"testing"
)

func tinyWordPiece(t *testing.T, lowercase bool) *WordPiece {
	t.Helper()
	f, err := os.Open("testdata/vocab_tiny.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w, err := NewWordPiece(f, lowercase)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func TestWordPieceTokens(t *testing.T) {
	w := tinyWordPiece(t, true)
	tests := []struct {
		name, text string
		want       []string
	}{
		{"whole words and punctuation", "I love hiking.", []string{"i", "love", "hiking", "."}},
		{"continuation pieces", "trekking", []string{"trek", "##king"}},
		{"longest match first", "unaffable", []string{"un", "##aff", "##able"}},
		{"a word with an unknown part is one [UNK]", "hikx love", []string{"[UNK]", "love"}},
		{"lower-cased", "LOVE Hiking", []string{"love", "hiking"}},
		{"accents stripped", "Café", []string{"cafe"}},
		{"apostrophe splits", "don't", []string{"don", "'", "t"}},
		{"punctuation runs split per character", "?!,", []string{"?", "!", ","}},
		{"CJK ideographs are words", "中国", []string{"中", "国"}},
		{"control characters dropped, whitespace kinds split", "i\u0000\tlove\u00a0the\ncafe", []string{"i", "love", "the", "cafe"}},
		{"format characters dropped without a split", "hik\u200bing", []string{"hiking"}},
		{"empty", "", nil},
		{"only spaces", " \n\t ", nil},
		{"over-long word is [UNK]", strings.Repeat("a", maxWordChars+1), []string{"[UNK]"}},
		{"long word at the limit splits", "a" + strings.Repeat("b", 3), []string{"a", "##b", "##b", "##b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := w.Tokens(tt.text); !slices.Equal(got, tt.want) {
				t.Errorf("Tokens(%q) = %q, want %q", tt.text, got, tt.want)
			}
		})
	}
}

func TestWordPieceCased(t *testing.T) {
	w := tinyWordPiece(t, false)
	if got, want := w.Tokens("Love love"), []string{"[UNK]", "love"}; !slices.Equal(got, want) {
		t.Errorf("cased Tokens = %q, want %q", got, want)
	}
	if got, want := w.Tokens("café"), []string{"[UNK]"}; !slices.Equal(got, want) {
		t.Errorf("cased keeps accents: Tokens = %q, want %q", got, want)
	}
}

func TestWordPieceEncode(t *testing.T) {
	w := tinyWordPiece(t, true)
	// ids are line numbers of testdata/vocab_tiny.txt: [CLS]=2 [SEP]=3 i=5 love=6 hiking=9 .=14
	tests := []struct {
		name   string
		text   string
		maxLen int
		want   []int64
	}{
		{"wrapped in CLS and SEP", "I love hiking.", 256, []int64{2, 5, 6, 9, 14, 3}},
		{"truncated to maxLen with SEP kept", "I love hiking.", 4, []int64{2, 5, 6, 3}},
		{"truncation inside a word's pieces", "trekking", 3, []int64{2, 10, 3}},
		{"empty text", "", 256, []int64{2, 3}},
		{"maxLen below 2 still gives CLS SEP", "i love", 1, []int64{2, 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := w.Encode(tt.text, tt.maxLen); !slices.Equal(got, tt.want) {
				t.Errorf("Encode(%q, %d) = %v, want %v", tt.text, tt.maxLen, got, tt.want)
			}
		})
	}
	if w.PadID() != 0 {
		t.Errorf("PadID = %d, want 0", w.PadID())
	}
}

func TestWordPieceEncodeWords(t *testing.T) {
	w := tinyWordPiece(t, true)
	tests := []struct {
		name   string
		text   string
		maxLen int
		words  []string
	}{
		{"each piece carries its word, CLS and SEP none", "I love trekking.", 256, []string{"", "i", "love", "trekking", "trekking", ".", ""}},
		{"a possessive is three words", "Don's", 256, []string{"", "don", "'", "s", ""}},
		{"truncated with the ids", "I love trekking.", 5, []string{"", "i", "love", "trekking", ""}},
		{"empty text", "", 256, []string{"", ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ids, words := w.EncodeWords(tt.text, tt.maxLen)
			if !slices.Equal(words, tt.words) {
				t.Errorf("EncodeWords(%q) words = %q, want %q", tt.text, words, tt.words)
			}
			if want := w.Encode(tt.text, tt.maxLen); !slices.Equal(ids, want) {
				t.Errorf("EncodeWords(%q) ids = %v, Encode's %v", tt.text, ids, want)
			}
		})
	}
}

func TestWordPieceVocabNeedsSpecialTokens(t *testing.T) {
	_, err := NewWordPiece(strings.NewReader("[PAD]\n[UNK]\n[CLS]\nhello\n"), true)
	if err == nil || !strings.Contains(err.Error(), "[SEP]") {
		t.Fatalf("NewWordPiece without [SEP] = %v, want an ErrVocab naming [SEP]", err)
	}
}
