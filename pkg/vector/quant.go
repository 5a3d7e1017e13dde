package vector

import "math"

// Approximate search. A segment (one user's points of one scope) with more than the store's
// exact maximum (WithExactMax, DefaultExactMax) is searched through int8 codes of its
// normalised vectors: a scan of 1 byte per dimension instead of 4, with an AVX2 kernel on amd64.
// The codes only choose candidates: quantRescore times as many as an exact search keeps are
// re-scored with the float32 vectors in float64, so every score a search returns is exact
// and only which points reach the top can differ from an exact search (measured on the LoCoMo
// dev split and in TestQuantisedSearchRecall).
const (
	// DefaultExactMax is the default largest segment searched exactly.
	DefaultExactMax = 5000
	// DefaultSpillMin is the default largest quantised segment whose float32 vectors stay in
	// memory (25 MB of them at 384 dimensions) for the re-scoring; a larger one spills them.
	DefaultSpillMin = 16 * blockPoints
	// quantRescore: candidates re-scored exactly, per candidate an exact search keeps.
	quantRescore = 4
	// codeMax and queryMax are the largest magnitudes of a point's codes (int8) and of the
	// query's (int16, so that the query adds almost no rounding of its own).
	codeMax  = 127
	queryMax = 32767
)

// quantise writes v's codes (v scaled by inv = 1/‖v‖, then so its largest component is
// codeMax) into code and returns the scale that turns a code dot product back into a cosine
// share: cos(v, q) ≈ scale · qscale · Σ code·qcode.
func quantise(v []float32, inv float32, code []int8) float32 {
	return quantiseTo(v, inv, code, codeMax)
}

// quantErrSlack bounds, with a wide margin, what quantErrBound leaves out: the float32
// roundings in computing the codes, their scales and the scan's product (a few parts in 10⁷
// of a cosine) and the product of the two rounding errors (about 10⁻⁶ at 384 dimensions).
const quantErrSlack = 1e-4

// quantErrBound bounds |code score - exact cosine| of a point with code scale scale against a
// query with code scale qscale, sqrtDim = √dim. Each code is its scaled component rounded, off
// by at most half a step (scale/2 for the point, qscale/2 for the query); the cosine of two
// unit vectors moves by at most the norm of such an error vector, √dim·scale/2 (Cauchy–Schwarz),
// plus the query's, √dim·qscale/2. The scan's clamping to [0, 1] cannot widen the gap.
func quantErrBound(scale, qscale float32, sqrtDim float64) float64 {
	return 0.5*sqrtDim*(float64(scale)+float64(qscale)) + quantErrSlack
}

// quantiseQuery is quantise for the query, into int16 codes up to queryMax.
func quantiseQuery(q []float32, inv float32, code []int16) float32 {
	return quantiseTo(q, inv, code, queryMax)
}

func quantiseTo[T int8 | int16](v []float32, inv float32, code []T, top float32) float32 {
	var m float32
	for _, x := range v {
		m = max(m, float32(math.Abs(float64(x*inv))))
	}
	if m == 0 {
		clear(code)
		return 0
	}
	f := top / m
	for j, x := range v {
		code[j] = T(math.Round(float64(x * inv * f)))
	}
	return m / top
}

// dotsInt8Go is the portable dotsInt8.
func dotsInt8Go(q []int16, codes []int8, dim int, out []int32) {
	q = q[:dim]
	for v := range out {
		c := codes[v*dim : v*dim+dim]
		var s0, s1, s2, s3 int32
		j := 0
		for ; j+4 <= dim; j += 4 {
			s0 += int32(q[j]) * int32(c[j])
			s1 += int32(q[j+1]) * int32(c[j+1])
			s2 += int32(q[j+2]) * int32(c[j+2])
			s3 += int32(q[j+3]) * int32(c[j+3])
		}
		for ; j < dim; j++ {
			s0 += int32(q[j]) * int32(c[j])
		}
		out[v] = s0 + s1 + s2 + s3
	}
}
