package embed

import (
	"context"
	"math"
	"testing"
)

func embedOne(t *testing.T, e Embedder, text string) []float32 {
	t.Helper()
	vs, err := e.Embed(context.Background(), []string{text})
	if err != nil {
		t.Fatalf("embed %q: %v", text, err)
	}
	if len(vs) != 1 || len(vs[0]) != e.Dim() {
		t.Fatalf("embed %q: got %d vectors", text, len(vs))
	}
	return vs[0]
}

func TestHashDeterministic(t *testing.T) {
	e := NewHash()
	a := embedOne(t, e, "The user lives in Boston and likes coffee.")
	b := embedOne(t, NewHash(), "The user lives in Boston and likes coffee.")
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("dimension %d differs between runs: %v vs %v", i, a[i], b[i])
		}
	}
	// Pinned values: a change to the features, weights or hash must bump
	// HashModel, since stored indexes depend on them.
	got := embedOne(t, e, "hello world")
	pinned := map[int]float32{50: 0.5364418, 74: -0.18775463, 89: 0.18775463}
	for i, want := range pinned {
		if math.Abs(float64(got[i]-want)) > 1e-6 {
			t.Fatalf("dim %d of %q = %v, want %v (features changed: bump HashModel)", i, "hello world", got[i], want)
		}
	}
	if e.Model() != "hash-v1-384" || e.Dim() != 384 {
		t.Fatalf("model %q dim %d", e.Model(), e.Dim())
	}
}

func TestHashNormalised(t *testing.T) {
	tests := []struct {
		name string
		text string
		zero bool
	}{
		{"english sentence", "I moved to Denver last spring.", false},
		{"single word", "coffee", false},
		{"unicode letters kept", "東京に住んでいます", false},
		{"digits only", "2024 42", false},
		{"empty text is the zero vector", "", true},
		{"punctuation only is the zero vector", "?!... --", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := embedOne(t, NewHash(), tc.text)
			var n float64
			for _, x := range v {
				n += float64(x) * float64(x)
			}
			if tc.zero {
				if n != 0 {
					t.Fatalf("norm² = %v, want 0", n)
				}
				return
			}
			if math.Abs(math.Sqrt(n)-1) > 1e-5 {
				t.Fatalf("norm = %v, want 1", math.Sqrt(n))
			}
		})
	}
}

func TestHashSimilarity(t *testing.T) {
	tests := []struct {
		name      string
		anchor    string
		similar   string
		unrelated string
	}{
		{"shared words", "The user lives in Boston", "user lives in Boston now", "Favourite programming language is Rust"},
		{"inflection via char 3-grams", "she enjoys running marathons", "he enjoyed a marathon run", "the invoice is due on Friday"},
		{"typo still close", "my dog is named Max", "my dgo is named Max", "quarterly revenue grew by ten percent"},
		{"word order via bigrams", "coffee with milk every morning", "every morning coffee with milk", "deploy the cluster on kubernetes"},
		{"CJK", "我喜欢喝咖啡", "我很喜欢咖啡", "明天下午开会"},
	}
	e := NewHash()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := embedOne(t, e, tc.anchor)
			s := Cosine(a, embedOne(t, e, tc.similar))
			u := Cosine(a, embedOne(t, e, tc.unrelated))
			if s <= u {
				t.Fatalf("similar %.3f <= unrelated %.3f", s, u)
			}
		})
	}
}

func TestCosine(t *testing.T) {
	tests := []struct {
		name string
		a, b []float32
		want float32
	}{
		{"identical", []float32{1, 2, 3}, []float32{1, 2, 3}, 1},
		{"opposite", []float32{1, 0}, []float32{-1, 0}, -1},
		{"orthogonal", []float32{1, 0}, []float32{0, 1}, 0},
		{"scale invariant", []float32{1, 1}, []float32{3, 3}, 1},
		{"zero vector", []float32{0, 0}, []float32{1, 1}, 0},
		{"length mismatch", []float32{1}, []float32{1, 1}, 0},
		{"empty", nil, nil, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Cosine(tc.a, tc.b); math.Abs(float64(got-tc.want)) > 1e-6 {
				t.Fatalf("got %v want %v", got, tc.want)
			}
		})
	}
}

func TestHashHonoursContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := NewHash().Embed(ctx, []string{"a"}); err == nil {
		t.Fatal("want error from cancelled context")
	}
}

func BenchmarkHashEmbed(b *testing.B) {
	e := NewHash()
	texts := []string{
		"The user moved from Boston to Denver in March and now works remotely for a fintech startup.",
		"Prefers dark roast coffee, no sugar; dislikes meetings before 10am.",
		"我喜欢在周末去爬山，然后喝一杯咖啡。",
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.Embed(ctx, texts); err != nil {
			b.Fatal(err)
		}
	}
}
