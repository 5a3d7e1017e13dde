//go:build !purego

package vector

import "golang.org/x/sys/cpu"

// hasAVX2 selects the assembly kernel.
var hasAVX2 = cpu.X86.HasAVX2

//go:noescape
func dotsInt8AVX2(q []int16, codes []int8, dim int, out []int32)

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
