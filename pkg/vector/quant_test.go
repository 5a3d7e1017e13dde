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

// A segment is quantised once it outgrows the exact maximum and comes back into blocks below
// half of it; its vectors read back bit for bit either way.
func TestSegmentSpillsAndComesBack(t *testing.T) {
	pt := newPartition("a", "u", 10, t.TempDir())
	defer pt.release()
	r := rand.New(rand.NewPCG(7, 8))
	want := map[string][]float32{}
	var ids []string
	for i := range 2*blockPoints + 5 {
		v := make([]float32, 16)
		for j := range v {
			v[j] = float32(r.NormFloat64())
		}
		id := fmt.Sprintf("00000000-0000-0000-0000-%012d", i)
		pt.put(Point{ID: id, Scope: "user", Vector: v})
		want[id], ids = v, append(ids, id)
	}
	check := func(when string, quantised bool) {
		t.Helper()
		if s := pt.segs[0]; (s.spill != nil) != quantised || s.err != nil {
			t.Fatalf("%s: quantised %v (err %v), want %v", when, s.spill != nil, s.err, quantised)
		}
		for id, v := range want {
			p, ok, err := pt.get(id)
			if !ok || err != nil || !slices.Equal(p.Vector, v) {
				t.Fatalf("%s: %s = %v, %v, %v; want %v", when, id, p.Vector, ok, err, v)
			}
		}
	}
	check("grown", true)
	for _, id := range ids[:len(ids)-6] { // removals move the last point into each hole
		pt.remove(id)
		delete(want, id)
	}
	check("at 6 points", true)
	for _, id := range ids[len(ids)-6 : len(ids)-4] {
		pt.remove(id)
		delete(want, id)
	}
	check("at 4 points, below half the maximum", false)
}

func BenchmarkDot32(b *testing.B) {
	q, v := make([]float32, 384), make([]float32, 384*blockPoints)
	for i := range v {
		v[i] = float32(i%7) - 3
	}
	b.SetBytes(int64(len(v) * 4))
	for b.Loop() {
		for i := 0; i < len(v); i += 384 {
			_ = dot32(q, v[i:i+384])
		}
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
