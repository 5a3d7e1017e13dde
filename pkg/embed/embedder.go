// Package embed turns text into dense vectors: the Embedder interface, a
// deterministic feature-hashing embedder that needs no model files, and an LRU
// cache that wraps any embedder.
package embed

import (
	"context"
	"errors"
	"math"
)

// Embedder turns texts into vectors of a fixed dimension.
type Embedder interface {
	// Embed returns one vector per text, in order. Implementations batch.
	Embed(ctx context.Context, texts []string) ([][]float32, error)
	// Dim is the length of every vector Embed returns.
	Dim() int
	// Model is the model id stored with every index built from these
	// vectors (e.g. "hash-v1-384"); vectors of two models never mix.
	Model() string
}

// QueryEmbedder is implemented by embedders whose model embeds a search query differently
// from the texts it is matched against (e5's "query: " / "passage: " prefixes, bge's query
// instruction). Embed is then the document side; EmbedQuery the query side.
type QueryEmbedder interface {
	EmbedQuery(ctx context.Context, queries []string) ([][]float32, error)
}

// EmbedQuery embeds search queries: with e's EmbedQuery when it has one, else with Embed
// (a symmetric model embeds queries and documents alike).
func EmbedQuery(ctx context.Context, e Embedder, queries []string) ([][]float32, error) {
	if q, ok := e.(QueryEmbedder); ok {
		return q.EmbedQuery(ctx, queries)
	}
	return e.Embed(ctx, queries)
}

// MaskedQueryEmbedder is implemented by embedders that can embed one query several times in
// one model run, with some of its words left out of what the model reads (recall's
// per-person queries: docs/recall-quality.md, issue 18's person round).
type MaskedQueryEmbedder interface {
	// EmbedQueryMasked returns one vector per drop list, all from one batch: the query as
	// EmbedQuery embeds it, but with the list's words (whole words, any case) masked out (an
	// empty list masks nothing).
	EmbedQueryMasked(ctx context.Context, query string, drops [][]string) ([][]float32, error)
}

// ErrNoMasking: the embedder cannot mask words of a query (EmbedQueryMasked of one that
// wraps an embedder without it).
var ErrNoMasking = errors.New("embed: the model cannot mask words of a query")

// EmbedQueryMasked is e's EmbedQueryMasked, or ErrNoMasking when it has none.
func EmbedQueryMasked(ctx context.Context, e Embedder, query string, drops [][]string) ([][]float32, error) {
	if m, ok := e.(MaskedQueryEmbedder); ok {
		return m.EmbedQueryMasked(ctx, query, drops)
	}
	return nil, ErrNoMasking
}

// Pinger is implemented by embedders that call a server (an OpenAI-compatible one): Ping
// fails while the server cannot embed, so a consumer can tell its outage from a message's own
// failure and redeliver the message instead of dead-lettering it (docs/design.md §8). A model
// run in the process (hash, ONNX) cannot be down and has no Ping.
type Pinger interface {
	Ping(ctx context.Context) error
}

// PingerOf is e's Pinger, looking through the embedding cache; ok is false when e has none.
func PingerOf(e Embedder) (Pinger, bool) {
	if c, ok := e.(*Cached); ok {
		e = c.next
	}
	p, ok := e.(Pinger)
	return p, ok
}

// CosineScaler is implemented by embedders whose cosine similarities sit on another scale
// than the one recall's fusion weights, threshold and boosts were set on (all-MiniLM-L6-v2's:
// a question against an unrelated turn near 0.13, against its best match near 0.55). e5's
// cosines, for one, all fall between 0.7 and 0.85.
type CosineScaler interface {
	ScaleCosine(cos float64) float64
}

// ScaleCosine maps a cosine of e's vectors onto that scale (unchanged when e has none).
func ScaleCosine(e Embedder, cos float64) float64 {
	if s, ok := e.(CosineScaler); ok {
		return s.ScaleCosine(cos)
	}
	return cos
}

// DuplicateCosiner is implemented by embedders whose raw cosines call for another near-duplicate
// threshold than the extraction rules' (memory.CosineDuplicate, set on all-MiniLM-L6-v2): two
// different statements embedded by e5-small-v2 often reach 0.92.
type DuplicateCosiner interface {
	DuplicateCosine() float64
}

// DuplicateCosine is e's near-duplicate cosine, or def when it names none (or e is nil).
func DuplicateCosine(e Embedder, def float64) float64 {
	if d, ok := e.(DuplicateCosiner); ok && d.DuplicateCosine() > 0 {
		return d.DuplicateCosine()
	}
	return def
}

// Provider is implemented by embedders that name their provider (hash,
// openai, onnx). The cache key includes it; embedders without it are keyed
// by their model id alone.
type Provider interface {
	Provider() string
}

// Cosine returns the cosine similarity of a and b, or 0 when either is a zero
// vector or their lengths differ.
func Cosine(a, b []float32) float32 {
	if len(a) != len(b) || len(a) == 0 {
		return 0
	}
	var dot, na, nb float64
	for i := range a {
		x, y := float64(a[i]), float64(b[i])
		dot += x * y
		na += x * x
		nb += y * y
	}
	if na == 0 || nb == 0 {
		return 0
	}
	return float32(dot / (math.Sqrt(na) * math.Sqrt(nb)))
}

// Normalize scales v to unit length in place (a zero vector stays as it is).
func Normalize(v []float32) {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	if s == 0 {
		return
	}
	inv := float32(1 / math.Sqrt(s))
	for i := range v {
		v[i] *= inv
	}
}
