package vector

import (
	"slices"
	"strings"
	"testing"
	"unicode"
)

func TestTerms(t *testing.T) {
	tests := []struct {
		name string
		text string
		want []string
	}{
		{"stop words dropped", "What did she do about it?", nil},
		{"inflections share a stem", "Hiking, hikes and hiked", []string{"hike", "hike", "hike"}},
		{"plurals and -ing", "painting puppies", []string{"paint", "puppi"}},
		{"short words kept", "Max's dog ran", []string{"max", "s", "dog", "ran"}},
		{"digits kept", "in 2023 at 10am", []string{"2023", "10am"}},
		{"non-ascii words not stemmed", "cafés Zürich", []string{"cafés", "zürich"}},
		{"han characters one term each", "我喜欢咖啡", []string{"我", "喜", "欢", "咖", "啡"}},
		{"empty", "", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Terms(tc.text); !slices.Equal(got, tc.want) {
				t.Fatalf("Terms(%q) = %q, want %q", tc.text, got, tc.want)
			}
		})
	}
}

func TestStem(t *testing.T) {
	tests := []struct{ word, want string }{
		{"hiking", "hike"},
		{"running", "run"},
		{"falling", "fall"},
		{"agreed", "agree"},
		{"caresses", "caress"},
		{"ponies", "poni"},
		{"happy", "happi"},
		{"boss", "boss"},
		{"sky", "sky"},
		{"café", "café"},
	}
	for _, tc := range tests {
		t.Run(tc.word, func(t *testing.T) {
			if got := stem(tc.word); got != tc.want {
				t.Fatalf("stem(%q) = %q, want %q", tc.word, got, tc.want)
			}
		})
	}
}

// termsByRune is Terms as it was before its ASCII fast path and word slicing: every rune
// through the Unicode tables, words built rune by rune. FuzzTermsMatchesRuneByRune holds
// Terms to it.
func termsByRune(s string) []string {
	var out []string
	var b strings.Builder
	flush := func() {
		if b.Len() == 0 {
			return
		}
		w := b.String()
		b.Reset()
		if !stopWords[w] {
			out = append(out, stem(w))
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

func FuzzTermsMatchesRuneByRune(f *testing.F) {
	for _, s := range []string{
		"What did she do about it?", "Hiking, hikes and hiked", "Max's dog ran", "in 2023 at 10am",
		"cafés Zürich", "我喜欢咖啡", "e\u0301cole \u0301x", "ÀÉÎ-õü_ß", "\xff\xfeab\xc3", "ﬁne ǅemal İstanbul", "",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := Terms(s), termsByRune(s); !slices.Equal(got, want) {
			t.Fatalf("Terms(%q) = %q, rune by rune %q", s, got, want)
		}
	})
}

func BenchmarkTerms(b *testing.B) {
	text := "Caroline went hiking with her sister in Boston last weekend and loved the autumn colours"
	for b.Loop() {
		_ = Terms(text)
	}
}
