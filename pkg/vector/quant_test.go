package vector

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/membus/membus/pkg/embed"
)

func TestDotsInt8MatchesPortable(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, dim := range []int{8, 32, 100, 384, 1024} {
		t.Run(fmt.Sprint(dim), func(t *testing.T) {
			const n = 37
			q := make([]int16, dim)
			codes := make([]int8, n*dim)
			for j := range q {
				q[j] = int16(r.IntN(2*queryMax+1) - queryMax)
			}
			for j := range codes {
				codes[j] = int8(r.IntN(2*codeMax+1) - codeMax)
			}
			for j := range dim { // the extremes, where a narrower sum would overflow
				q[j], codes[j] = queryMax, codeMax
			}
			got, want := make([]int32, n), make([]int32, n)
			dotsInt8(q, codes, dim, got)
			dotsInt8Go(q, codes, dim, want)
			if !slices.Equal(got, want) {
				t.Fatalf("dotsInt8 = %v\nportable = %v", got, want)
			}
			if want[0] != int32(dim*queryMax*codeMax) {
				t.Fatalf("extreme row = %d, want %d", want[0], dim*queryMax*codeMax)
			}
		})
	}
}

// checkDots32 holds dots32 and dots32Go to the float64 dot product, within float32 rounding
// of the sum of the terms' magnitudes (the two add in different orders, so they need not
// agree bit for bit).
func checkDots32(t *testing.T, q, vecs []float32, dim, n int) {
	t.Helper()
	got, port := make([]float32, n), make([]float32, n)
	dots32(q, vecs, dim, got)
	dots32Go(q, vecs, dim, port)
	for v := range n {
		var exact, mag float64
		for j := range dim {
			x := float64(q[j]) * float64(vecs[v*dim+j])
			exact += x
			mag += math.Abs(x)
		}
		tol := 1e-5*mag + 1e-30
		if math.Abs(float64(got[v])-exact) > tol || math.Abs(float64(port[v])-exact) > tol {
			t.Fatalf("dim %d vector %d: dots32 %g, portable %g, exact %g (tolerance %g)", dim, v, got[v], port[v], exact, tol)
		}
	}
}

func TestDots32MatchesExact(t *testing.T) {
	tests := []struct {
		name string
		fill func(r *rand.Rand, j int) float32
	}{
		{"gaussian", func(r *rand.Rand, _ int) float32 { return float32(r.NormFloat64()) }},
		{"zeros", func(*rand.Rand, int) float32 { return 0 }},
		{"alternating signs cancel", func(_ *rand.Rand, j int) float32 { return float32(1 - 2*(j%2)) }},
		{"large and small magnitudes", func(r *rand.Rand, j int) float32 { return float32(r.NormFloat64() * math.Pow(10, float64(j%9-4))) }},
	}
	for _, tc := range tests {
		for _, dim := range []int{8, 32, 100, 384, 1024} {
			t.Run(fmt.Sprintf("%s/%d", tc.name, dim), func(t *testing.T) {
				r := rand.New(rand.NewPCG(5, uint64(dim)))
				const n = 37
				q, vecs := make([]float32, dim), make([]float32, n*dim)
				for j := range q {
					q[j] = tc.fill(r, j)
				}
				for j := range vecs {
					vecs[j] = tc.fill(r, j)
				}
				checkDots32(t, q, vecs, dim, n)
			})
		}
	}
}

func FuzzDots32MatchesExact(f *testing.F) {
	f.Add(uint64(1), uint8(12), uint8(3))
	f.Add(uint64(2), uint8(1), uint8(1))
	f.Add(uint64(3), uint8(32), uint8(0))
	f.Fuzz(func(t *testing.T, seed uint64, dim32, n uint8) {
		r := rand.New(rand.NewPCG(seed, 6))
		dim := 32 * (int(dim32)%48 + 1) // the kernel's dimensions: multiples of 32
		if seed%2 == 1 {
			dim += int(seed % 31) // and others, the portable path
		}
		q, vecs := make([]float32, dim), make([]float32, int(n)*dim)
		for j := range q {
			q[j] = float32(r.NormFloat64())
		}
		for j := range vecs {
			vecs[j] = float32(r.NormFloat64())
		}
		checkDots32(t, q, vecs, dim, int(n))
	})
}

func TestQuantisedCosineIsClose(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	const dim = 384
	v, q := make([]float32, dim), make([]float32, dim)
	for j := range v {
		v[j] = float32(r.NormFloat64())
		q[j] = float32(r.NormFloat64()) + v[j]
	}
	vn, qn := norm(v), norm(q)
	code, qc := make([]int8, dim), make([]int16, dim)
	scale := quantise(v, float32(1/vn), code)
	qscale := quantiseQuery(q, float32(1/qn), qc)
	out := make([]int32, 1)
	dotsInt8(qc, code, dim, out)
	got, want := float64(float32(out[0])*scale*qscale), dense(v, vn, q, qn)
	if math.Abs(got-want) > 0.01 {
		t.Fatalf("quantised cosine %.5f, exact %.5f", got, want)
	}
}

// quantScore is scanRange's code score of v against q, and the exact cosine.
func quantScore(v, q []float32) (approx, exact float64, scale, qscale float32) {
	vn, qn := norm(v), norm(q)
	var inv, invQ float32
	if vn > 0 {
		inv = float32(1 / vn)
	}
	if qn > 0 {
		invQ = float32(1 / qn)
	}
	code, qc := make([]int8, len(v)), make([]int16, len(q))
	scale = quantise(v, inv, code)
	qscale = quantiseQuery(q, invQ, qc)
	out := make([]int32, 1)
	dotsInt8(qc, code, len(v), out)
	x := float32(out[0]) * scale * qscale
	return float64(min(max(x, 0), 1)), dense(v, vn, q, qn), scale, qscale
}

// The error bound the re-scoring skips candidates by holds for every kind of vector, and
// for queries aimed at a point's rounding error (where the error comes closest to it).
func TestQuantErrBoundHolds(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	const dim = 384
	sqrtDim := math.Sqrt(dim)
	gauss := func() []float32 {
		v := make([]float32, dim)
		for j := range v {
			v[j] = float32(r.NormFloat64())
		}
		return v
	}
	sparse := func() []float32 { // the hash embedder's kind: a few buckets, small counts
		v := make([]float32, dim)
		for range 3 + r.IntN(20) {
			v[r.IntN(dim)] += float32(r.IntN(3) + 1)
		}
		return v
	}
	spiked := func() []float32 { // one large component: the coarsest codes
		v := gauss()
		v[r.IntN(dim)] = 40
		return v
	}
	tiny := func() []float32 {
		v := gauss()
		for j := range v {
			v[j] *= 1e-20
		}
		return v
	}
	// aimed returns a query along v's rounding error, plus a share of v so the cosine stays
	// positive (the scan clamps at 0).
	aimed := func(v []float32) []float32 {
		vn := norm(v)
		code := make([]int8, dim)
		scale := quantise(v, float32(1/vn), code)
		q := make([]float32, dim)
		for j := range q {
			e := float64(code[j])*float64(scale) - float64(v[j])/vn
			q[j] = float32(e/(0.5*float64(scale)) + 0.05*float64(v[j])/vn*sqrtDim)
		}
		return q
	}
	worst := 0.0
	for _, c := range []struct {
		name string
		v, q func() []float32
	}{
		{"gaussian", gauss, gauss},
		{"sparse", sparse, sparse},
		{"spiked point", spiked, gauss},
		{"spiked query", gauss, spiked},
		{"tiny", tiny, gauss},
		{"query along the point's rounding error, gaussian", gauss, nil},
		{"query along the point's rounding error, spiked", spiked, nil},
		{"query along the point's rounding error, sparse", sparse, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			for range 2000 {
				v := c.v()
				var q []float32
				if c.q != nil {
					q = c.q()
				} else {
					q = aimed(v)
				}
				approx, exact, scale, qscale := quantScore(v, q)
				b := quantErrBound(scale, qscale, sqrtDim)
				if d := math.Abs(approx - exact); d > b {
					t.Fatalf("code score %.6f, exact %.6f: off by %.6f, bound %.6f", approx, exact, d, b)
				} else {
					worst = max(worst, (d)/(b-quantErrSlack))
				}
			}
		})
	}
	t.Logf("largest error: %.2f of the bound", worst)
}

// The re-scoring skips candidates by the error bound and returns what re-scoring every one of
// them returns: the same points with the same scores, in the same order.
func TestDenseTopSkipsOnlyLosers(t *testing.T) {
	h := embed.NewHash()
	r := rand.New(rand.NewPCG(13, 14))
	words := strings.Fields("alice bob carol likes loves visited coffee tea cello guitar denver boston paris tokyo garden " +
		"kitchen python golang rust kafka redis nats monday summer winter dog cat novel chess sister teacher doctor")
	sentence := func(n int) string {
		ws := make([]string, n)
		for i := range ws {
			ws[i] = words[r.IntN(len(words))]
		}
		return strings.Join(ws, " ")
	}
	pt := newPartition("a", "u", 0, math.MaxInt, t.TempDir())
	defer pt.release()
	for i := range 3000 {
		text := fmt.Sprintf("%s (note %d)", sentence(6+r.IntN(8)), i%40) // repeated notes: tied scores
		v, err := h.Embed(context.Background(), []string{text})
		if err != nil {
			t.Fatal(err)
		}
		pt.put(Point{ID: fmt.Sprintf("00000000-0000-0000-0000-%012d", i), Scope: "user", Text: text, Vector: v[0]})
	}
	s := pt.segs[0]
	skippable := 0
	for qi := range 100 {
		qv, err := h.Embed(context.Background(), []string{sentence(2 + qi%6)})
		if err != nil {
			t.Fatal(err)
		}
		q, k := qv[0], []int{1, 5, 24}[qi%3]
		qn := norm(q)
		got, err := pt.denseTop(Filter{}, []int32{0}, q, qn, k)
		if err != nil {
			t.Fatal(err)
		}
		// the reference: every candidate of the scan re-scored
		invQ := float32(1 / qn)
		qc := make([]int16, s.dim)
		qscale := quantiseQuery(q, invQ, qc)
		scan := newTopHeap((k + denseMargin) * quantRescore)
		for from := 0; from < s.len(); from += blockPoints {
			pt.scanRange(Filter{}, 0, from, min(from+blockPoints, s.len()), q, invQ, qc, qscale, &scan)
		}
		ref := newTopHeap(k)
		for _, c := range scan.h {
			c.score = dense(s.vec(int(c.r.i)), s.norms[c.r.i], q, qn)
			ref.push(c)
		}
		want := ref.sorted()
		if !slices.Equal(got, want) {
			t.Fatalf("query %d, k %d: %v, re-scoring every candidate %v", qi, k, got, want)
		}
		for _, c := range scan.h {
			if c.score+quantErrBound(s.scale[c.r.i], qscale, math.Sqrt(float64(s.dim))) < want[len(want)-1].score {
				skippable++
			}
		}
	}
	if skippable == 0 {
		t.Fatal("no candidate below the k-th score by more than the bound: the skipping is not exercised")
	}
	t.Logf("%d candidates skippable", skippable)
}

// A segment is quantised once it outgrows the exact maximum and searched exactly again below
// half of it; a quantised one spills its vectors once it outgrows the spill minimum and takes
// them back into memory below half of that (or of the exact maximum). Its vectors read back
// bit for bit in every state, and a search returns exact scores in every state.
func TestSegmentSpillsAndComesBack(t *testing.T) {
	const (
		exact     = "exact"
		inMemory  = "quantised, vectors in memory"
		spilledTo = "quantised, vectors spilled"
	)
	type step struct {
		points int // removed down to this many
		want   string
	}
	n := 2*blockPoints + 5
	for _, c := range []struct {
		name     string
		spillMin int
		steps    []step
	}{
		{"spill minimum 0: every quantised segment spills", 0,
			[]step{{n, spilledTo}, {6, spilledTo}, {4, exact}}},
		{"spill minimum above the segment: the vectors stay in memory", 4 * blockPoints,
			[]step{{n, inMemory}, {6, inMemory}, {4, exact}}},
		{"spill minimum in between: spilled, back in memory, exact", blockPoints,
			[]step{{n, spilledTo}, {blockPoints / 2, spilledTo}, {blockPoints/2 - 1, inMemory}, {6, inMemory}, {4, exact}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			pt := newPartition("a", "u", 10, c.spillMin, t.TempDir())
			defer pt.release()
			r := rand.New(rand.NewPCG(7, 8))
			want := map[string][]float32{}
			var ids []string
			for i := range n {
				v := make([]float32, 16)
				for j := range v {
					v[j] = float32(r.NormFloat64())
				}
				id := fmt.Sprintf("00000000-0000-0000-0000-%012d", i)
				pt.put(Point{ID: id, Scope: "user", Vector: v})
				want[id], ids = v, append(ids, id)
			}
			q := make([]float32, 16)
			for j := range q {
				q[j] = float32(r.NormFloat64())
			}
			for _, st := range c.steps {
				for len(ids) > st.points { // removals move the last point into each hole
					pt.remove(ids[0])
					delete(want, ids[0])
					ids = ids[1:]
				}
				s := pt.segs[0]
				got := exact
				switch {
				case s.quant && s.spill != nil:
					got = spilledTo
				case s.quant:
					got = inMemory
				case s.spill != nil:
					got = "spilled but not quantised"
				}
				if got != st.want || s.err != nil || (s.spill == nil) != (len(s.blocks) == (st.points+blockPoints-1)/blockPoints) {
					t.Fatalf("at %d points: %s (err %v, %d blocks), want %s", st.points, got, s.err, len(s.blocks), st.want)
				}
				for id, v := range want {
					p, ok, err := pt.get(id)
					if !ok || err != nil || !slices.Equal(p.Vector, v) {
						t.Fatalf("at %d points: %s = %v, %v, %v; want %v", st.points, id, p.Vector, ok, err, v)
					}
				}
				hits, err := pt.search(Filter{Scopes: []string{"user"}}, q, "", 5)
				if err != nil || len(hits) != min(5, st.points) {
					t.Fatalf("at %d points: search: %d hits, %v", st.points, len(hits), err)
				}
				for _, h := range hits {
					v := want[h.ID]
					if d := dense(v, norm(v), q, norm(q)); h.Dense != d {
						t.Fatalf("at %d points: %s scored %v, exactly %v", st.points, h.ID, h.Dense, d)
					}
				}
			}
		})
	}
}

func BenchmarkDots32(b *testing.B) {
	for _, c := range []struct {
		name string
		fn   func(q, vecs []float32, dim int, out []float32)
	}{{"kernel", dots32}, {"portable", dots32Go}} {
		b.Run(c.name, func(b *testing.B) {
			q, v, out := make([]float32, 384), make([]float32, 384*blockPoints), make([]float32, blockPoints)
			for i := range v {
				v[i] = float32(i%7) - 3
			}
			b.SetBytes(int64(len(v) * 4))
			for b.Loop() {
				c.fn(q, v, 384, out)
			}
		})
	}
}

func BenchmarkDotsInt8(b *testing.B) {
	for _, c := range []struct {
		name string
		fn   func(q []int16, codes []int8, dim int, out []int32)
	}{{"kernel", dotsInt8}, {"portable", dotsInt8Go}} {
		b.Run(c.name, func(b *testing.B) {
			q, codes, out := make([]int16, 384), make([]int8, 384*blockPoints), make([]int32, blockPoints)
			for i := range codes {
				codes[i] = int8(i%255 - 127)
			}
			b.SetBytes(int64(len(codes)))
			for b.Loop() {
				c.fn(q, codes, 384, out)
			}
		})
	}
}
