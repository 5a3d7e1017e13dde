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
	if e.Model() != "hash-v2-384" || e.Dim() != 384 {
		t.Fatalf("model %q dim %d", e.Model(), e.Dim())
	}
}

// TestHashPinned pins output values of every hash version: a change to the
// features, weights, stemmer or hash must bump the model id, since stored
// indexes depend on them, and an old version must never change.
func TestHashPinned(t *testing.T) {
	tests := []struct {
		name   string
		e      Embedder
		model  string
		text   string
		pinned map[int]float32
	}{
		{"v2 without inflections", NewHash(), "hash-v2-384", "hello world", map[int]float32{50: 0.5364418, 74: -0.18775462, 89: 0.18775462}},
		{"v2 stems word features", NewHash(), "hash-v2-384", "she went hiking", map[int]float32{33: 0, 86: 0.22156669, 113: 0.44313338, 226: 0}},
		{"v1 without inflections", NewHashV1(), "hash-v1-384", "hello world", map[int]float32{50: 0.5364418, 74: -0.18775463, 89: 0.18775463}},
		{"v1 keeps words as written", NewHashV1(), "hash-v1-384", "she went hiking", map[int]float32{33: 0.22156669, 86: 0, 113: 0, 226: -0.44313338}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.e.Model() != tc.model || tc.e.Dim() != HashDim {
				t.Fatalf("model %q dim %d, want %q %d", tc.e.Model(), tc.e.Dim(), tc.model, HashDim)
			}
			got := embedOne(t, tc.e, tc.text)
			for i, want := range tc.pinned {
				if math.Abs(float64(got[i]-want)) > 1e-6 {
					t.Fatalf("dim %d of %q = %v, want %v (features changed: bump the model id)", i, tc.text, got[i], want)
				}
			}
		})
	}
}

func TestHashStem(t *testing.T) {
	tests := []struct{ word, want string }{
		{"hiking", "hike"},
		{"hikes", "hike"},
		{"hiked", "hike"},
		{"running", "run"},
		{"falling", "fall"},
		{"painted", "paint"},
		{"paints", "paint"},
		{"agreed", "agree"},
		{"caresses", "caress"},
		{"ponies", "poni"},
		{"happy", "happi"},
		{"boss", "boss"},
		{"sky", "sky"},
		{"was", "was"},
		{"café", "café"},
		{"2024s", "2024s"},
	}
	for _, tc := range tests {
		t.Run(tc.word, func(t *testing.T) {
			if got := hashStem(tc.word); got != tc.want {
				t.Fatalf("hashStem(%q) = %q, want %q", tc.word, got, tc.want)
			}
		})
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
			for _, e := range []Embedder{NewHash(), NewHashV1()} {
				checkNorm(t, embedOne(t, e, tc.text), tc.zero)
			}
		})
	}
}

func checkNorm(t *testing.T, v []float32, zero bool) {
	t.Helper()
	var n float64
	for _, x := range v {
		n += float64(x) * float64(x)
	}
	if zero {
		if n != 0 {
			t.Fatalf("norm² = %v, want 0", n)
		}
		return
	}
	if math.Abs(math.Sqrt(n)-1) > 1e-5 {
		t.Fatalf("norm = %v, want 1", math.Sqrt(n))
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
		{"inflection via stems and char 3-grams", "she enjoys running marathons", "he enjoyed a marathon run", "the invoice is due on Friday"},
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

// TestHashV2StemsInflections: stemmed word features bring inflected forms
// closer than hash-v1's char 3-grams alone did.
func TestHashV2StemsInflections(t *testing.T) {
	pairs := [][2]string{
		{"she went hiking with friends", "she hiked with a friend"},
		{"painting landscapes", "he paints a landscape"},
		{"adopted two puppies", "adopting a puppy"},
	}
	for _, p := range pairs {
		v2 := Cosine(embedOne(t, NewHash(), p[0]), embedOne(t, NewHash(), p[1]))
		v1 := Cosine(embedOne(t, NewHashV1(), p[0]), embedOne(t, NewHashV1(), p[1]))
		if v2 <= v1 {
			t.Errorf("%q ~ %q: hash-v2 %.3f <= hash-v1 %.3f", p[0], p[1], v2, v1)
		}
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
