package qdrant

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/qdrant/go-client/qdrant"

	"github.com/membus/membus/pkg/vector"
)

// Search implements vector.Store.
//
// With both a vector and query terms it sends one hybrid Query: a dense
// prefetch and a `bm25` prefetch, k each, both carrying the tenant filter,
// fused by RRF with a limit of 2k — the union of the two top-k lists. RRF
// replaces the per-side scores, and vector.Hit needs both, so:
//
//   - Dense is the cosine of the query with the stored vector (returned
//     with the hit; Qdrant stores it normalised, so this is the cosine
//     Qdrant ranked by), computed like the local store, clamped to [0,1];
//   - Keyword comes from a second sparse Query restricted to the
//     candidates' ids (and the tenant filter again), so the BM25 score is
//     Qdrant's, with its IDF; a candidate without a matching term scores 0.
//
// With only a vector or only terms, one plain Query of that side.
func (s *Store) Search(ctx context.Context, f vector.Filter, vec []float32, query string, k int) ([]vector.Hit, error) {
	if f.AccountID == "" || f.UserID == "" {
		return nil, fmt.Errorf("search: %w", vector.ErrMissingTenant)
	}
	if k <= 0 {
		return nil, fmt.Errorf("search: k = %d: %w", k, vector.ErrInvalid)
	}
	if len(vec) > 0 && len(vec) != s.dim {
		return nil, fmt.Errorf("search: query vector has %d dimensions, collection has %d: %w", len(vec), s.dim, vector.ErrInvalid)
	}
	qIdx, qVal := querySparse(query)
	dense, sparse := len(vec) > 0, len(qIdx) > 0
	if !dense && !sparse {
		return []vector.Hit{}, nil
	}
	ctx, done, err := s.begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("search: %w", err)
	}
	defer done()

	filter := searchFilter(f)
	req := &qdrant.QueryPoints{
		CollectionName: s.cfg.Collection,
		Filter:         filter,
		WithPayload:    qdrant.NewWithPayload(true),
		WithVectors:    qdrant.NewWithVectorsInclude(denseName),
	}
	switch {
	case dense && sparse:
		req.Prefetch = []*qdrant.PrefetchQuery{
			{Query: qdrant.NewQueryDense(vec), Using: qdrant.PtrOf(denseName), Filter: filter, Limit: qdrant.PtrOf(uint64(k))},
			{Query: qdrant.NewQuerySparse(qIdx, qVal), Using: qdrant.PtrOf(sparseName), Filter: filter, Limit: qdrant.PtrOf(uint64(k))},
		}
		req.Query = qdrant.NewQueryFusion(qdrant.Fusion_RRF)
		req.Limit = qdrant.PtrOf(uint64(2 * k))
	case dense:
		req.Query = qdrant.NewQueryDense(vec)
		req.Using = qdrant.PtrOf(denseName)
		req.Limit = qdrant.PtrOf(uint64(k))
	default:
		req.Query = qdrant.NewQuerySparse(qIdx, qVal)
		req.Using = qdrant.PtrOf(sparseName)
		req.Limit = qdrant.PtrOf(uint64(k))
	}
	res, err := s.client.Query(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("search: %w", mapErr(err))
	}

	keyword := map[string]float64{}
	switch {
	case dense && sparse && len(res) > 0:
		ids := make([]*qdrant.PointId, len(res))
		for i, r := range res {
			ids[i] = r.GetId()
		}
		rf := searchFilter(f)
		rf.Must = append(rf.Must, qdrant.NewHasID(ids...))
		scored, err := s.client.Query(ctx, &qdrant.QueryPoints{
			CollectionName: s.cfg.Collection,
			Query:          qdrant.NewQuerySparse(qIdx, qVal),
			Using:          qdrant.PtrOf(sparseName),
			Filter:         rf,
			Limit:          qdrant.PtrOf(uint64(len(ids))),
			WithPayload:    qdrant.NewWithPayload(false),
		})
		if err != nil {
			return nil, fmt.Errorf("search: keyword scores: %w", mapErr(err))
		}
		for _, r := range scored {
			keyword[idKey(r.GetId())] = float64(r.GetScore())
		}
	case sparse:
		for _, r := range res {
			keyword[idKey(r.GetId())] = float64(r.GetScore())
		}
	}

	hits := make([]vector.Hit, 0, len(res))
	qn := norm(vec)
	for _, r := range res {
		p, err := point(r.GetId(), r.GetPayload(), r.GetVectors())
		if err != nil {
			return nil, fmt.Errorf("search: %w", err)
		}
		hits = append(hits, vector.Hit{
			ID:      p.ID,
			Dense:   cosine(vec, qn, p.Vector),
			Keyword: keyword[idKey(r.GetId())],
			Point:   p,
		})
	}
	slices.SortFunc(hits, func(a, b vector.Hit) int {
		if c := cmp.Compare(b.Dense, a.Dense); c != 0 {
			return c
		}
		if c := cmp.Compare(b.Keyword, a.Keyword); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	return hits, nil
}

// idKey is the canonical string of a UUID point id.
func idKey(id *qdrant.PointId) string {
	if c, ok := canonicalID(id.GetUuid()); ok {
		return c
	}
	return id.GetUuid()
}

// cosine returns the cosine of q (norm qn) and v clamped to [0,1]; 0 when
// either is empty or zero.
func cosine(q []float32, qn float64, v []float32) float64 {
	if qn == 0 || len(q) != len(v) {
		return 0
	}
	vn := norm(v)
	if vn == 0 {
		return 0
	}
	var dot float64
	for i, x := range v {
		dot += float64(x) * float64(q[i])
	}
	return min(max(dot/(vn*qn), 0), 1)
}

func norm(v []float32) float64 {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	return math.Sqrt(s)
}
