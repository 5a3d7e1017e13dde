//go:build !unix

package vector

import "os"

// mapAnon returns nil: blocks live on the Go heap.
func mapAnon(int) []byte { return nil }

// unmap does nothing.
func unmap([]byte) {}

// readFileMapped reads the file at path into the heap.
func readFileMapped(path string) ([]byte, func(), error) {
	b, err := os.ReadFile(path)
	return b, func() {}, err
}
