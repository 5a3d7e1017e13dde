package vector

import (
	"slices"
	"testing"
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
