//go:build !purego

package vector

import "golang.org/x/sys/cpu"

// hasAVX2 selects the int8 assembly kernel, hasFMA (with AVX2) the float32 one.
var (
	hasAVX2 = cpu.X86.HasAVX2
	hasFMA  = cpu.X86.HasAVX2 && cpu.X86.HasFMA
)

//go:noescape
func dotsInt8AVX2(q []int16, codes []int8, dim int, out []int32)

//go:noescape
func dots32AVX2(q []float32, vecs []float32, dim int, out []float32)

// dotsInt8 sets out[v] to the dot product of q with the v-th code vector of
// codes (dim each), for v < len(out).
func dotsInt8(q []int16, codes []int8, dim int, out []int32) {
	if len(out) == 0 {
		return
	}
	_ = codes[len(out)*dim-1]
	_ = q[dim-1]
	if hasAVX2 && dim%32 == 0 {
		dotsInt8AVX2(q, codes, dim, out)
		return
	}
	dotsInt8Go(q, codes, dim, out)
}

// dots32 sets out[v] to the float32 dot product of q with the v-th vector of
// vecs (dim each), for v < len(out). The sum's order differs from dots32Go's,
// so the last bits of a result may too.
func dots32(q, vecs []float32, dim int, out []float32) {
	if len(out) == 0 {
		return
	}
	_ = vecs[len(out)*dim-1]
	_ = q[dim-1]
	if hasFMA && dim%32 == 0 {
		dots32AVX2(q, vecs, dim, out)
		return
	}
	dots32Go(q, vecs, dim, out)
}
