//go:build unix

package vector

import (
	"syscall"
	"unsafe"
)

// newBlock returns a zeroed block of n floats outside the Go heap (an
// anonymous private mapping). Vectors are most of the index's memory; on
// the heap they would also count in the collector's heap goal, which lets
// the process grow to twice its live size. Falls back to the heap when the
// mapping fails.
func newBlock(n int) vecBlock {
	raw, err := syscall.Mmap(-1, 0, 4*n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil || n == 0 {
		return vecBlock{v: make([]float32, n)}
	}
	return vecBlock{v: unsafe.Slice((*float32)(unsafe.Pointer(&raw[0])), n), raw: raw}
}

// free unmaps the block; its floats must not be used afterwards.
func (b *vecBlock) free() {
	if b.raw != nil {
		_ = syscall.Munmap(b.raw)
	}
	*b = vecBlock{}
}
