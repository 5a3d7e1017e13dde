package vector

import (
	"fmt"
	"os"
	"unsafe"
)

// spillFile holds the float32 vectors of a quantised segment by position,
// outside the process's memory: the search scans the segment's int8 codes
// and reads back only the candidates it re-scores (and the points it
// returns), through pread. The kernel's page cache keeps the file warm and
// may evict it; nothing in it is needed after a restart (the segment's
// snapshot and log hold the vectors), so the file is removed as soon as it
// is opened, where the system allows it, and at close otherwise (leftovers
// are removed at the next open, see spillDir).
type spillFile struct {
	f    *os.File
	dim  int
	name string // set while the file still has a name to remove
}

// spillDir is where a store in dir puts its spill files.
func spillDir(dir string) string { return dir + string(os.PathSeparator) + "spill" }

func openSpill(dir string, dim int) (*spillFile, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("spill vectors: %w", err)
	}
	f, err := os.CreateTemp(dir, "seg-*.vec")
	if err != nil {
		return nil, fmt.Errorf("spill vectors: %w", err)
	}
	sf := &spillFile{f: f, dim: dim}
	if err := os.Remove(f.Name()); err != nil {
		sf.name = f.Name() // an open file keeps its name on some systems
	}
	return sf, nil
}

func floatBytes(v []float32) []byte {
	if len(v) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), 4*len(v))
}

// write stores vector i (in the host's byte order: the file never leaves
// the process).
func (sf *spillFile) write(i int, v []float32) error {
	if _, err := sf.f.WriteAt(floatBytes(v), int64(i)*int64(sf.dim)*4); err != nil {
		return fmt.Errorf("spill vector: %w", err)
	}
	return nil
}

// read reads vector i into dst (len dim).
func (sf *spillFile) read(i int, dst []float32) error {
	if _, err := sf.f.ReadAt(floatBytes(dst[:sf.dim]), int64(i)*int64(sf.dim)*4); err != nil {
		return fmt.Errorf("read spilled vector: %w", err)
	}
	return nil
}

func (sf *spillFile) close() {
	_ = sf.f.Close()
	if sf.name != "" {
		_ = os.Remove(sf.name)
	}
}
