package embed

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
)

// countingEmbedder records how many texts and calls reach it.
type countingEmbedder struct {
	mu    sync.Mutex
	calls int
	texts int
	err   error
}

func (c *countingEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	c.mu.Lock()
	c.calls++
	c.texts += len(texts)
	err := c.err
	c.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return NewHash().Embed(ctx, texts)
}
func (c *countingEmbedder) Dim() int      { return HashDim }
func (c *countingEmbedder) Model() string { return "counting-384" }

func TestCachedHitsAndMisses(t *testing.T) {
	ctx := context.Background()
	inner := &countingEmbedder{}
	c := NewCached(inner, 10)

	first, err := c.Embed(ctx, []string{"a b", "c d", "a b"})
	if err != nil {
		t.Fatal(err)
	}
	if inner.calls != 1 || inner.texts != 2 {
		t.Fatalf("first batch: %d calls %d texts, want 1 call with 2 texts (duplicate embedded once)", inner.calls, inner.texts)
	}
	if s := c.Stats(); s.Hits != 0 || s.Misses != 3 || s.Entries != 2 {
		t.Fatalf("after first batch: %+v", s)
	}

	second, err := c.Embed(ctx, []string{"c d", "e f", "a b"})
	if err != nil {
		t.Fatal(err)
	}
	if inner.calls != 2 || inner.texts != 3 {
		t.Fatalf("second batch sent %d texts in total, want only the one miss added", inner.texts)
	}
	if s := c.Stats(); s.Hits != 2 || s.Misses != 4 {
		t.Fatalf("after second batch: %+v", s)
	}
	if Cosine(first[0], second[2]) < 0.9999 || Cosine(first[1], second[0]) < 0.9999 {
		t.Fatal("cached vector differs from the embedded one")
	}

	second[0][0] = 42 // callers own their copies
	third, _ := c.Embed(ctx, []string{"c d"})
	if third[0][0] == 42 {
		t.Fatal("caller's change leaked into the cache")
	}
}

func TestCachedEvictsLeastRecentlyUsed(t *testing.T) {
	ctx := context.Background()
	inner := &countingEmbedder{}
	c := NewCached(inner, 2)
	mustEmbed := func(texts ...string) {
		t.Helper()
		if _, err := c.Embed(ctx, texts); err != nil {
			t.Fatal(err)
		}
	}
	mustEmbed("one")
	mustEmbed("two")
	mustEmbed("one")   // "one" is now most recent
	mustEmbed("three") // evicts "two"
	before := inner.texts
	mustEmbed("one")
	if inner.texts != before {
		t.Fatal("recently used entry was evicted")
	}
	mustEmbed("two")
	if inner.texts != before+1 {
		t.Fatal("least recently used entry was not evicted")
	}
	if s := c.Stats(); s.Entries != 2 {
		t.Fatalf("entries %d, want 2", s.Entries)
	}
}

func TestCachedKeyIncludesModel(t *testing.T) {
	a := NewCached(NewHash(), 4)
	b := NewCached(&countingEmbedder{}, 4)
	if a.key("", "x") == b.key("", "x") {
		t.Fatal("two models share a cache key")
	}
	if a.Provider() != "hash" || a.Model() != HashModel || a.Dim() != HashDim {
		t.Fatalf("wrapper does not pass through identity: %s %s %d", a.Provider(), a.Model(), a.Dim())
	}
}

func TestCachedErrorIsNotCached(t *testing.T) {
	ctx := context.Background()
	boom := errors.New("boom")
	inner := &countingEmbedder{err: boom}
	c := NewCached(inner, 4)
	if _, err := c.Embed(ctx, []string{"x"}); !errors.Is(err, boom) {
		t.Fatalf("err = %v, want wrapped boom", err)
	}
	inner.mu.Lock()
	inner.err = nil
	inner.mu.Unlock()
	if _, err := c.Embed(ctx, []string{"x"}); err != nil {
		t.Fatal(err)
	}
	if inner.texts != 2 {
		t.Fatalf("failed text was not retried: %d texts", inner.texts)
	}
}

func TestCachedConcurrent(t *testing.T) {
	ctx := context.Background()
	c := NewCached(NewHash(), 16)
	ref := NewHash()
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				text := fmt.Sprintf("text %d", (g+i)%24)
				got, err := c.Embed(ctx, []string{text})
				if err != nil {
					t.Error(err)
					return
				}
				want, _ := ref.Embed(ctx, []string{text})
				if Cosine(got[0], want[0]) < 0.9999 {
					t.Errorf("%q: cached vector differs", text)
					return
				}
			}
		}()
	}
	wg.Wait()
	s := c.Stats()
	if s.Hits+s.Misses != 400 || s.Entries > 16 {
		t.Fatalf("stats %+v: want 400 lookups, at most 16 entries", s)
	}
}

// queryEmbedder embeds a query as its text with a "q:" prefix, so the two sides differ.
type queryEmbedder struct{ countingEmbedder }

func (q *queryEmbedder) EmbedQuery(ctx context.Context, queries []string) ([][]float32, error) {
	p := make([]string, len(queries))
	for i, t := range queries {
		p[i] = "q: " + t
	}
	return q.Embed(ctx, p)
}

func TestEmbedQuery(t *testing.T) {
	ctx := context.Background()
	h := NewHash()
	got, err := EmbedQuery(ctx, h, []string{"a b"})
	if err != nil {
		t.Fatal(err)
	}
	want, _ := h.Embed(ctx, []string{"a b"})
	if Cosine(got[0], want[0]) < 0.9999 {
		t.Fatal("EmbedQuery of a symmetric embedder differs from its Embed")
	}

	inner := &queryEmbedder{}
	c := NewCached(inner, 10)
	doc, _ := c.Embed(ctx, []string{"a b"})
	q1, err := EmbedQuery(ctx, c, []string{"a b"})
	if err != nil {
		t.Fatal(err)
	}
	if inner.calls != 2 {
		t.Fatalf("%d calls, want 2: a query must not be answered from the document's cache entry", inner.calls)
	}
	if Cosine(doc[0], q1[0]) > 0.9999 {
		t.Fatal("the query's vector is the document's")
	}
	q2, _ := EmbedQuery(ctx, c, []string{"a b"})
	if inner.calls != 2 || Cosine(q1[0], q2[0]) < 0.9999 {
		t.Fatalf("second query: %d calls, want the cached query vector", inner.calls)
	}
}

// scaledEmbedder doubles cosines.
type scaledEmbedder struct{ countingEmbedder }

func (*scaledEmbedder) ScaleCosine(cos float64) float64 { return 2 * cos }

func TestScaleCosine(t *testing.T) {
	if got := ScaleCosine(NewHash(), 0.3); got != 0.3 {
		t.Fatalf("ScaleCosine(hash, 0.3) = %v, want the cosine itself", got)
	}
	if got := ScaleCosine(NewCached(NewHash(), 1), 0.3); got != 0.3 {
		t.Fatalf("ScaleCosine(cached hash, 0.3) = %v, want the cosine itself", got)
	}
	if got := ScaleCosine(NewCached(&scaledEmbedder{}, 1), 0.3); got != 0.6 {
		t.Fatalf("ScaleCosine(cached scaler, 0.3) = %v, want the wrapped embedder's 0.6", got)
	}
}

// dupEmbedder names its own near-duplicate cosine.
type dupEmbedder struct {
	countingEmbedder
	dup float64
}

func (d *dupEmbedder) DuplicateCosine() float64 { return d.dup }

func TestDuplicateCosine(t *testing.T) {
	tests := []struct {
		name string
		e    Embedder
		want float64
	}{
		{"no embedder", nil, 0.92},
		{"one that names none", NewHash(), 0.92},
		{"cached, wrapping one that names none", NewCached(NewHash(), 1), 0.92},
		{"one that names 0.95", &dupEmbedder{dup: 0.95}, 0.95},
		{"cached, wrapping one that names 0.95", NewCached(&dupEmbedder{dup: 0.95}, 1), 0.95},
		{"0 is none", &dupEmbedder{}, 0.92},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := DuplicateCosine(tt.e, 0.92); got != tt.want {
				t.Fatalf("DuplicateCosine = %v, want %v", got, tt.want)
			}
		})
	}
}

// maskingEmbedder answers EmbedQueryMasked with one vector per drop list, the list's length
// in its first place.
type maskingEmbedder struct{ countingEmbedder }

func (m *maskingEmbedder) EmbedQueryMasked(_ context.Context, _ string, drops [][]string) ([][]float32, error) {
	out := make([][]float32, len(drops))
	for i, d := range drops {
		out[i] = make([]float32, HashDim)
		out[i][0] = float32(len(d))
	}
	return out, nil
}

// TestCachedEmbedQueryMasked: the cache passes masked queries to an embedder that has them
// and answers ErrNoMasking for one that has not.
func TestCachedEmbedQueryMasked(t *testing.T) {
	ctx := context.Background()
	if _, err := NewCached(NewHash(), 4).EmbedQueryMasked(ctx, "What do Ann and Bo like?", [][]string{{"Bo"}}); !errors.Is(err, ErrNoMasking) {
		t.Fatalf("over the hash embedder: %v, want ErrNoMasking", err)
	}
	if _, err := EmbedQueryMasked(ctx, NewHash(), "What do Ann and Bo like?", [][]string{{"Bo"}}); !errors.Is(err, ErrNoMasking) {
		t.Fatalf("the hash embedder: %v, want ErrNoMasking", err)
	}
	c := NewCached(&maskingEmbedder{}, 4)
	for range 2 {
		rows, err := c.EmbedQueryMasked(ctx, "What do Ann and Bo like?", [][]string{{"Bo", "and"}, {}})
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != 2 || rows[0][0] != 2 || rows[1][0] != 0 {
			t.Fatalf("rows %v, want the wrapped embedder's two", rows)
		}
	}
}
