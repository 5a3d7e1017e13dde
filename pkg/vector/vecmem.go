package vector

import "unsafe"

// vecBlock is one block of float32 vectors; raw is set when it lives outside
// the Go heap (mapAnon) and must be freed.
type vecBlock struct {
	v   []float32
	raw []byte
}

// newBlock returns a zeroed block of n floats, outside the Go heap when it
// can.
func newBlock(n int) vecBlock {
	raw := mapAnon(4 * n)
	if raw == nil {
		return vecBlock{v: make([]float32, n)}
	}
	return vecBlock{v: unsafe.Slice((*float32)(unsafe.Pointer(&raw[0])), n), raw: raw}
}

// free releases the block; its floats must not be used afterwards.
func (b *vecBlock) free() {
	unmap(b.raw)
	*b = vecBlock{}
}

// codeBlock is one block of int8 codes (quant.go), held like vecBlock.
type codeBlock struct {
	c   []int8
	raw []byte
}

// newCodeBlock returns a zeroed block of n codes, outside the Go heap when
// it can.
func newCodeBlock(n int) codeBlock {
	raw := mapAnon(n)
	if raw == nil {
		return codeBlock{c: make([]int8, n)}
	}
	return codeBlock{c: unsafe.Slice((*int8)(unsafe.Pointer(&raw[0])), n), raw: raw}
}

// free releases the block; its codes must not be used afterwards.
func (b *codeBlock) free() {
	unmap(b.raw)
	*b = codeBlock{}
}
