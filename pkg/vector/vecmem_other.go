//go:build !unix

package vector

// newBlock returns a zeroed block of n floats.
func newBlock(n int) vecBlock { return vecBlock{v: make([]float32, n)} }

// free drops the block.
func (b *vecBlock) free() { *b = vecBlock{} }
