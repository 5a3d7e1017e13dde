package vector

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
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
