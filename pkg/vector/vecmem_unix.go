//go:build unix

package vector

import "syscall"

// mapAnon returns n zeroed bytes outside the Go heap (an anonymous private
// mapping), or nil when the mapping fails. Vectors and their codes are most
// of the index's memory; on the heap they would also count in the
// collector's heap goal, which lets the process grow to twice its live
// size.
func mapAnon(n int) []byte {
	if n == 0 {
		return nil
	}
	raw, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return nil
	}
	return raw
}

// unmap releases what mapAnon returned.
func unmap(raw []byte) {
	if raw != nil {
		_ = syscall.Munmap(raw)
	}
}
