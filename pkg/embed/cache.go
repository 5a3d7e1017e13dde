package embed

import (
	"container/list"
	"context"
	"crypto/sha256"
	"fmt"
	"sync"
)

// Cached wraps an Embedder with an in-memory LRU cache keyed by
// SHA-256(provider, model, text). Embed sends only the misses to the wrapped
// embedder, in one batch. Returned vectors are copies: callers may modify
// them.
type Cached struct {
	next     Embedder
	provider string
	max      int

	mu     sync.Mutex
	ll     *list.List // front = most recently used; values are *cacheEntry
	items  map[[32]byte]*list.Element
	hits   uint64
	misses uint64
}

type cacheEntry struct {
	key [32]byte
	vec []float32
}

// CacheStats counts cache lookups.
type CacheStats struct {
	Hits    uint64
	Misses  uint64
	Entries int
}

// NewCached wraps e with an LRU cache of at most maxEntries vectors
// (at least 1).
func NewCached(e Embedder, maxEntries int) *Cached {
	if maxEntries < 1 {
		maxEntries = 1
	}
	provider := fmt.Sprintf("%T", e)
	if p, ok := e.(Provider); ok {
		provider = p.Provider()
	}
	return &Cached{
		next:     e,
		provider: provider,
		max:      maxEntries,
		ll:       list.New(),
		items:    make(map[[32]byte]*list.Element),
	}
}

// Dim returns the wrapped embedder's dimension.
func (c *Cached) Dim() int { return c.next.Dim() }

// Model returns the wrapped embedder's model id.
func (c *Cached) Model() string { return c.next.Model() }

// Provider returns the wrapped embedder's provider.
func (c *Cached) Provider() string { return c.provider }

// Stats returns the hit and miss counts so far (one per text looked up).
func (c *Cached) Stats() CacheStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return CacheStats{Hits: c.hits, Misses: c.misses, Entries: c.ll.Len()}
}

// Embed answers cached texts from memory and embeds the misses in one batch.
// A text repeated within one call is embedded once.
func (c *Cached) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	return c.embed(ctx, texts, "", c.next.Embed)
}

// EmbedQuery is Embed for search queries: the wrapped embedder's EmbedQuery when it has one
// (cached apart from its documents, since the same text embeds differently as a query),
// else its Embed, sharing the documents' cache entries.
func (c *Cached) EmbedQuery(ctx context.Context, queries []string) ([][]float32, error) {
	if q, ok := c.next.(QueryEmbedder); ok {
		return c.embed(ctx, queries, "query", q.EmbedQuery)
	}
	return c.embed(ctx, queries, "", c.next.Embed)
}

// EmbedQueryMasked is the wrapped embedder's, uncached (ErrNoMasking when it has none):
// only a question that names two people asks for it, and its rows are one batch's.
func (c *Cached) EmbedQueryMasked(ctx context.Context, query string, drops [][]string) ([][]float32, error) {
	return EmbedQueryMasked(ctx, c.next, query, drops)
}

// ScaleCosine is the wrapped embedder's.
func (c *Cached) ScaleCosine(cos float64) float64 { return ScaleCosine(c.next, cos) }

// DuplicateCosine is the wrapped embedder's (0: it names none).
func (c *Cached) DuplicateCosine() float64 { return DuplicateCosine(c.next, 0) }

// embed looks texts up under kind ("" for documents) and embeds the misses with fn.
func (c *Cached) embed(ctx context.Context, texts []string, kind string, fn func(context.Context, []string) ([][]float32, error)) ([][]float32, error) {
	out := make([][]float32, len(texts))
	keys := make([][32]byte, len(texts))
	missIdx := make(map[[32]byte][]int)
	var missTexts []string
	var missKeys [][32]byte

	c.mu.Lock()
	for i, t := range texts {
		k := c.key(kind, t)
		keys[i] = k
		if el, ok := c.items[k]; ok {
			c.ll.MoveToFront(el)
			out[i] = clone(el.Value.(*cacheEntry).vec)
			c.hits++
			continue
		}
		c.misses++
		if _, seen := missIdx[k]; !seen {
			missTexts = append(missTexts, t)
			missKeys = append(missKeys, k)
		}
		missIdx[k] = append(missIdx[k], i)
	}
	c.mu.Unlock()

	if len(missTexts) == 0 {
		return out, nil
	}
	vecs, err := fn(ctx, missTexts)
	if err != nil {
		return nil, fmt.Errorf("embed %d uncached texts: %w", len(missTexts), err)
	}
	if len(vecs) != len(missTexts) {
		return nil, fmt.Errorf("embed %d uncached texts: embedder returned %d vectors", len(missTexts), len(vecs))
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	for j, k := range missKeys {
		for _, i := range missIdx[k] {
			out[i] = clone(vecs[j])
		}
		c.put(k, clone(vecs[j]))
	}
	return out, nil
}

func (c *Cached) put(k [32]byte, v []float32) {
	if el, ok := c.items[k]; ok {
		el.Value.(*cacheEntry).vec = v
		c.ll.MoveToFront(el)
		return
	}
	c.items[k] = c.ll.PushFront(&cacheEntry{key: k, vec: v})
	for c.ll.Len() > c.max {
		last := c.ll.Back()
		c.ll.Remove(last)
		delete(c.items, last.Value.(*cacheEntry).key)
	}
}

// key is SHA-256 over provider, model and text, each length-prefixed so no
// two different triples share an encoding; a query's key (kind "query") also has the kind
// (a document's key is unchanged from before queries had their own).
func (c *Cached) key(kind, text string) [32]byte {
	h := sha256.New()
	parts := []string{c.provider, c.next.Model(), text}
	if kind != "" {
		parts = append(parts, kind)
	}
	for _, s := range parts {
		fmt.Fprintf(h, "%d:", len(s))
		h.Write([]byte(s))
	}
	var k [32]byte
	h.Sum(k[:0])
	return k
}

func clone(v []float32) []float32 {
	return append([]float32(nil), v...)
}
