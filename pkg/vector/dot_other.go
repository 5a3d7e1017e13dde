//go:build !amd64 || purego

package vector

// dotsInt8 sets out[v] to the dot product of q with the v-th code vector of
// codes (dim each), for v < len(out).
func dotsInt8(q []int16, codes []int8, dim int, out []int32) {
	dotsInt8Go(q, codes, dim, out)
}

// dots32 sets out[v] to the float32 dot product of q with the v-th vector of
// vecs (dim each), for v < len(out).
func dots32(q, vecs []float32, dim int, out []float32) {
	dots32Go(q, vecs, dim, out)
}
