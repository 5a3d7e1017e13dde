package qdrant

import (
	"hash/fnv"
	"slices"

	"github.com/membus/membus/pkg/vector"
)

// BM25 parameters, the same as the local store's.
const (
	bm25K1 = 1.2
	bm25B  = 0.75
)

// termIndex is the sparse-vector index of a term: FNV-1a (32 bit) of its
// UTF-8 bytes. It is stable across processes, machines and releases, so
// every replica writes and queries the same dimensions. Two terms that
// collide share a dimension (a rare spurious keyword match, never a missed
// one).
func termIndex(term string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(term))
	return h.Sum32()
}

// docSparse is the `bm25` vector of a document: per term, the
// term-frequency half of BM25,
//
//	tf·(k1+1) / (tf + k1·(1 − b + b·len/avgLen))
//
// Qdrant multiplies each matching dimension by its IDF (the collection's
// `Modifier: Idf`) and sums, so the query score is the full BM25 with the
// collection's N and document frequencies. len is the document's term count;
// avgLen is the constant recorded with the collection, so a point's values
// never go stale when others are written. It returns nil for a text without
// terms (the point then has no `bm25` vector).
func docSparse(text string, avgLen float64) (indices []uint32, values []float32) {
	terms := vector.Terms(text)
	if len(terms) == 0 {
		return nil, nil
	}
	tf := make(map[uint32]int, len(terms))
	for _, t := range terms {
		tf[termIndex(t)]++
	}
	norm := bm25K1 * (1 - bm25B + bm25B*float64(len(terms))/avgLen)
	indices = make([]uint32, 0, len(tf))
	for i := range tf {
		indices = append(indices, i)
	}
	slices.Sort(indices)
	values = make([]float32, len(indices))
	for j, i := range indices {
		x := float64(tf[i])
		values[j] = float32(x * (bm25K1 + 1) / (x + norm))
	}
	return indices, values
}

// querySparse is the `bm25` query vector: weight 1 on each distinct query
// term, so the score is the sum over query terms of IDF × the document's
// value. It returns nil when the query has no terms.
func querySparse(query string) (indices []uint32, values []float32) {
	for _, t := range vector.Terms(query) {
		i := termIndex(t)
		if !slices.Contains(indices, i) {
			indices = append(indices, i)
		}
	}
	slices.Sort(indices)
	values = make([]float32, len(indices))
	for j := range values {
		values[j] = 1
	}
	if len(indices) == 0 {
		return nil, nil
	}
	return indices, values
}
