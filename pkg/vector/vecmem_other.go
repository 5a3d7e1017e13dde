//go:build !unix

package vector

// mapAnon returns nil: blocks live on the Go heap.
func mapAnon(int) []byte { return nil }

// unmap does nothing.
func unmap([]byte) {}
