//go:build unix

package vector

import (
	"os"
	"syscall"
)

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

// readFileMapped returns the contents of the file at path, mapped read-only rather than read
// into the heap (a snapshot of 100k vectors is hundreds of MB, which the collector would keep
// as its heap goal long after the load), and the function that unmaps it. Nothing may keep a
// reference into the bytes after release.
func readFileMapped(path string) (b []byte, release func(), err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	if st.Size() == 0 {
		return nil, func() {}, nil
	}
	b, err = syscall.Mmap(int(f.Fd()), 0, int(st.Size()), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil { // e.g. a file system without mmap
		b, err = os.ReadFile(path)
		return b, func() {}, err
	}
	return b, func() { _ = syscall.Munmap(b) }, nil
}
