package testenv

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// FilesHolding reads every file under dir as bytes and lists those that contain s, compared
// case-insensitively, as "<path relative to dir> (<copies>)". The erasure tests use it to prove
// that erased text is readable in no file.
func FilesHolding(t testing.TB, dir, s string) []string {
	t.Helper()
	want := bytes.ToLower([]byte(s))
	var out []string
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if n := bytes.Count(bytes.ToLower(b), want); n > 0 {
			rel, err := filepath.Rel(dir, path)
			if err != nil {
				return err
			}
			out = append(out, fmt.Sprintf("%s (%d)", rel, n))
		}
		return nil
	})
	if err != nil {
		t.Fatalf("read the files under %s: %v", dir, err)
	}
	return out
}
