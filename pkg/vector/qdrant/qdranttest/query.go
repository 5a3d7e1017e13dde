package qdranttest

import (
	"cmp"
	"context"
	"math"
	"slices"

	"github.com/qdrant/go-client/qdrant"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// defaultRRFK is Qdrant's default k of reciprocal rank fusion.
const defaultRRFK = 2

type scoredPoint struct {
	p     *storedPoint
	score float64
}

// stage is one level of a query: the request itself or a prefetch.
type stage struct {
	prefetch  []*qdrant.PrefetchQuery
	query     *qdrant.Query
	using     string
	filter    *qdrant.Filter
	threshold *float32
	limit     uint64
}

func (ps *pointsService) Query(_ context.Context, req *qdrant.QueryPoints) (*qdrant.QueryResponse, error) {
	s := ps.s
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queries = append(s.queries, proto.Clone(req).(*qdrant.QueryPoints))
	col, err := s.collection(req.GetCollectionName())
	if err != nil {
		return nil, err
	}
	limit := uint64(10)
	if req.Limit != nil {
		limit = req.GetLimit()
	}
	res, err := col.run(stage{
		prefetch: req.GetPrefetch(), query: req.GetQuery(), using: req.GetUsing(), filter: req.GetFilter(),
		threshold: req.ScoreThreshold, limit: limit + req.GetOffset(),
	})
	if err != nil {
		return nil, err
	}
	off := min(req.GetOffset(), uint64(len(res)))
	out := &qdrant.QueryResponse{}
	for _, r := range res[off:] {
		out.Result = append(out.Result, &qdrant.ScoredPoint{
			Id: r.p.id.proto(), Score: float32(r.score),
			Payload: payloadOut(r.p, req.GetWithPayload()), Vectors: vectorsOut(r.p, req.GetWithVectors()),
		})
	}
	return out, nil
}

// run evaluates a stage: its prefetches (each also under the stage's
// filter), then its query over their candidates, or over the whole
// collection without prefetches.
func (c *collection) run(st stage) ([]scoredPoint, error) {
	var lists [][]scoredPoint
	for _, pf := range st.prefetch {
		limit := uint64(10)
		if pf.Limit != nil {
			limit = pf.GetLimit()
		}
		f := pf.GetFilter()
		if st.filter != nil {
			f = &qdrant.Filter{Must: []*qdrant.Condition{qdrant.NewFilterAsCondition(st.filter)}}
			if pf.GetFilter() != nil {
				f.Must = append(f.Must, qdrant.NewFilterAsCondition(pf.GetFilter()))
			}
		}
		l, err := c.run(stage{prefetch: pf.GetPrefetch(), query: pf.GetQuery(), using: pf.GetUsing(), filter: f, threshold: pf.ScoreThreshold, limit: limit})
		if err != nil {
			return nil, err
		}
		lists = append(lists, l)
	}

	var out []scoredPoint
	switch q := st.query.GetVariant().(type) {
	case *qdrant.Query_Fusion:
		if q.Fusion != qdrant.Fusion_RRF {
			return nil, status.Errorf(codes.Unimplemented, "qdranttest: fusion %s is not implemented by the fake", q.Fusion)
		}
		if len(lists) == 0 {
			return nil, status.Error(codes.InvalidArgument, "Wrong input: fusion requires prefetch")
		}
		out = rrf(lists, defaultRRFK)
	case *qdrant.Query_Rrf:
		if len(lists) == 0 {
			return nil, status.Error(codes.InvalidArgument, "Wrong input: fusion requires prefetch")
		}
		k := defaultRRFK
		if q.Rrf.K != nil {
			k = int(q.Rrf.GetK())
		}
		out = rrf(lists, k)
	case *qdrant.Query_Nearest:
		var cands []*storedPoint
		if len(lists) > 0 {
			seen := map[pointID]bool{}
			for _, l := range lists {
				for _, sp := range l {
					if !seen[sp.p.id] {
						seen[sp.p.id] = true
						cands = append(cands, sp.p)
					}
				}
			}
		} else {
			var err error
			if cands, err = c.filtered(st.filter); err != nil {
				return nil, err
			}
		}
		var err error
		if out, err = c.nearest(q.Nearest, st.using, cands); err != nil {
			return nil, err
		}
	case nil:
		return nil, status.Error(codes.Unimplemented, "qdranttest: a query without a query variant is not implemented by the fake")
	default:
		return nil, status.Errorf(codes.Unimplemented, "qdranttest: query %T is not implemented by the fake", q)
	}
	if st.threshold != nil {
		out = slices.DeleteFunc(out, func(s scoredPoint) bool { return s.score < float64(*st.threshold) })
	}
	if uint64(len(out)) > st.limit {
		out = out[:st.limit]
	}
	return out, nil
}

func sortScored(s []scoredPoint) {
	slices.SortFunc(s, func(a, b scoredPoint) int {
		if c := cmp.Compare(b.score, a.score); c != 0 {
			return c
		}
		return compareIDs(a.p.id, b.p.id)
	})
}

// rrf fuses ranked lists as Qdrant does: each point scores the sum of
// 1/(k + rank) over the lists it is in, rank counted from 0 (Qdrant's
// rrf_scoring: 1 / (rank + k) with the 0-based position).
func rrf(lists [][]scoredPoint, k int) []scoredPoint {
	score := map[pointID]float64{}
	pts := map[pointID]*storedPoint{}
	for _, l := range lists {
		for i, sp := range l {
			score[sp.p.id] += 1 / float64(k+i)
			pts[sp.p.id] = sp.p
		}
	}
	out := make([]scoredPoint, 0, len(score))
	for id, s := range score {
		out = append(out, scoredPoint{pts[id], s})
	}
	sortScored(out)
	return out
}

// nearest scores the candidates against a dense (cosine) or sparse (dot
// product, IDF-weighted when the vector has the modifier) query vector.
// Points without the named vector are skipped; a sparse query returns only
// points sharing a dimension with it.
func (c *collection) nearest(in *qdrant.VectorInput, using string, cands []*storedPoint) ([]scoredPoint, error) {
	var out []scoredPoint
	switch v := in.GetVariant().(type) {
	case *qdrant.VectorInput_Dense:
		params := c.dense[using]
		if params == nil {
			return nil, status.Errorf(codes.InvalidArgument, "Wrong input: Not existing vector name error: %s", using)
		}
		q := v.Dense.GetData()
		if uint64(len(q)) != params.GetSize() {
			return nil, status.Errorf(codes.InvalidArgument, "Wrong input: Vector dimension error: expected dim: %d, got %d", params.GetSize(), len(q))
		}
		if params.GetDistance() != qdrant.Distance_Cosine {
			return nil, status.Errorf(codes.Unimplemented, "qdranttest: distance %s is not implemented by the fake", params.GetDistance())
		}
		qn := slices.Clone(q)
		normalize(qn)
		for _, p := range cands {
			d, ok := p.dense[using]
			if !ok {
				continue
			}
			var dot float64
			for i := range d {
				dot += float64(d[i]) * float64(qn[i])
			}
			out = append(out, scoredPoint{p, dot})
		}
	case *qdrant.VectorInput_Sparse:
		params := c.sparse[using]
		if params == nil {
			return nil, status.Errorf(codes.InvalidArgument, "Wrong input: Not existing vector name error: %s", using)
		}
		idx, val := v.Sparse.GetIndices(), v.Sparse.GetValues()
		if len(idx) != len(val) {
			return nil, status.Errorf(codes.InvalidArgument, "Wrong input: sparse query: %d indices, %d values", len(idx), len(val))
		}
		weight := map[uint32]float64{}
		for i, x := range idx {
			weight[x] = float64(val[i])
		}
		if params.GetModifier() == qdrant.Modifier_Idf {
			c.applyIDF(using, weight)
		}
		for _, p := range cands {
			sv, ok := p.sparse[using]
			if !ok {
				continue
			}
			var dot float64
			overlap := false
			for i, x := range sv.indices {
				if w, ok := weight[x]; ok {
					overlap = true
					dot += w * float64(sv.values[i])
				}
			}
			if overlap {
				out = append(out, scoredPoint{p, dot})
			}
		}
	default:
		return nil, status.Errorf(codes.Unimplemented, "qdranttest: nearest %T is not implemented by the fake", v)
	}
	sortScored(out)
	return out, nil
}

// applyIDF multiplies each query weight by the dimension's inverse document
// frequency over the whole collection: ln((N − n + 0.5)/(n + 0.5) + 1).
func (c *collection) applyIDF(name string, weight map[uint32]float64) {
	n := 0
	df := map[uint32]int{}
	for _, p := range c.points {
		sv, ok := p.sparse[name]
		if !ok {
			continue
		}
		n++
		for _, x := range sv.indices {
			if _, ok := weight[x]; ok {
				df[x]++
			}
		}
	}
	for x, w := range weight {
		d := float64(df[x])
		weight[x] = w * math.Log((float64(n)-d+0.5)/(d+0.5)+1)
	}
}
