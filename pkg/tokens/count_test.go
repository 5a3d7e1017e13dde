package tokens

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/tiktoken-go/tokenizer"
)

// o200k returns the real o200k_base codec (its vocabulary is compiled into
// tiktoken-go: no network).
var o200k = sync.OnceValues(func() (tokenizer.Codec, error) {
	return tokenizer.Get(tokenizer.O200kBase)
})

func realCount(t testing.TB, s string) int {
	t.Helper()
	enc, err := o200k()
	if err != nil {
		t.Fatalf("load o200k_base: %v", err)
	}
	n, err := enc.Count(s)
	if err != nil {
		t.Fatalf("o200k count: %v", err)
	}
	return n
}

func readCorpus(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestCountMatchesO200kWithinTenPercent(t *testing.T) {
	tests := []struct {
		name   string
		corpus string
	}{
		{"English chat with numbers and code", "english.txt"},
		{"CJK chat (Chinese, Japanese, Korean)", "cjk.txt"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			text := readCorpus(t, tc.corpus)
			want := realCount(t, text)
			got := Count(text)
			dev := float64(got-want) / float64(want)
			t.Logf("%s: %d bytes, estimate %d, o200k %d, deviation %+.1f%%", tc.corpus, len(text), got, want, 100*dev)
			if math.Abs(dev) > 0.10 {
				t.Fatalf("estimate %d is %+.1f%% off o200k's %d (limit ±10%%)", got, 100*dev, want)
			}
		})
	}
}

// Per line, the estimate should stay in the right range too: a total can
// hide errors that cancel out.
func TestCountPerLineWithinThirtyPercent(t *testing.T) {
	for _, name := range []string{"english.txt", "cjk.txt"} {
		var worst float64
		for _, line := range strings.Split(readCorpus(t, name), "\n") {
			want := realCount(t, line)
			if want < 20 {
				continue
			}
			dev := math.Abs(float64(Count(line)-want)) / float64(want)
			worst = max(worst, dev)
			if dev > 0.30 {
				t.Errorf("%s: line %q: estimate %d, o200k %d", name, line, Count(line), want)
			}
		}
		t.Logf("%s: worst line deviation %.1f%%", name, 100*worst)
	}
}

func TestCountSmallCases(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want int
	}{
		{"empty string is zero", "", 0},
		{"one common word", "hello", 1},
		{"space joins the next word", "hello world", 2},
		{"digits in groups of three", "12345678", 3},
		{"newline run is one token", "a\n\n\nb", 3},
		{"camel case splits", "QueryContext", 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Count(tc.in); got != tc.want {
				t.Fatalf("Count(%q) = %d, want %d (o200k says %d)", tc.in, got, tc.want, realCount(t, tc.in))
			}
		})
	}
}

func TestCountIsMonotoneInRepetition(t *testing.T) {
	unit := readCorpus(t, "english.txt")
	one, three := Count(unit), Count(unit+unit+unit)
	if three < 2*one || three > 4*one {
		t.Fatalf("three copies cost %d, one costs %d", three, one)
	}
}

func BenchmarkCount(b *testing.B) {
	for _, name := range []string{"english.txt", "cjk.txt"} {
		text := readCorpus(b, name)
		b.Run("estimate/"+name, func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			b.ReportAllocs()
			for b.Loop() {
				Count(text)
			}
		})
		b.Run("o200k/"+name, func(b *testing.B) {
			enc, err := o200k()
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(text)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := enc.Count(text); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
