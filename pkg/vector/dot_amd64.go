//go:build !purego

package vector

import (
	"fmt"

	"golang.org/x/sys/cpu"
)

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
	if kernelFits(hasAVX2, len(out), dim, len(q), len(codes)) {
		dotsInt8AVX2(q, codes, dim, out)
		return
	}
	dotsInt8Go(q, codes, dim, out)
}

// dots32 sets out[v] to the float32 dot product of q with the v-th vector of
// vecs (dim each), for v < len(out). The sum's order differs from dots32Go's,
// so the last bits of a result may too.
func dots32(q, vecs []float32, dim int, out []float32) {
	if kernelFits(hasFMA, len(out), dim, len(q), len(vecs)) {
		dots32AVX2(q, vecs, dim, out)
		return
	}
	dots32Go(q, vecs, dim, out)
}

// kernelFits reports whether an assembly kernel (has: the CPU runs it) may score n vectors of
// dim: the kernels take dim in steps of 32. It panics, as the portable loop would, when q
// (qLen values) or the vectors (vLen) are shorter than the kernel reads: assembly has no
// bounds checks of its own.
func kernelFits(has bool, n, dim, qLen, vLen int) bool {
	if n > 0 && (dim > qLen || n*dim > vLen) {
		panic(fmt.Sprintf("vector: dot kernel reads %d vectors of %d from %d values and a query of %d", n, dim, vLen, qLen))
	}
	return has && dim%32 == 0
}
