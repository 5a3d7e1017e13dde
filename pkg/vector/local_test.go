package vector_test

import (
	"testing"

	"github.com/membus/membus/pkg/vector"
	"github.com/membus/membus/pkg/vector/vectortest"
)

func openLocal(t *testing.T, dir string) *vector.Local {
	t.Helper()
	l, err := vector.OpenLocal(dir, vectortest.Model, vectortest.Dim)
	if err != nil {
		t.Fatalf("open local store: %v", err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l
}

func TestLocalConformance(t *testing.T) {
	vectortest.Run(t, func(t *testing.T) vector.Store { return openLocal(t, t.TempDir()) })
}

func TestLocalReopen(t *testing.T) {
	dir := t.TempDir()
	vectortest.RunReopen(t,
		func(t *testing.T) vector.Store { return openLocal(t, dir) },
		func(t *testing.T, s vector.Store) vector.Store {
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			return openLocal(t, dir)
		})
}
