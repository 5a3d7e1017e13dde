package vector_test

import (
	"testing"

	"github.com/membus/membus/pkg/vector"
	"github.com/membus/membus/pkg/vector/vectortest"
)

func openLocal(t *testing.T, dir string, opts ...vector.LocalOption) *vector.Local {
	t.Helper()
	l, err := vector.OpenLocal(dir, vectortest.Model, vectortest.Dim, opts...)
	if err != nil {
		t.Fatalf("open local store: %v", err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l
}

func TestLocalConformance(t *testing.T) {
	vectortest.Run(t, func(t *testing.T) vector.Store { return openLocal(t, t.TempDir()) })
}

// The same suite with every segment quantised (searched through their codes with exact
// re-scoring), the vectors in memory or spilled.
func TestLocalConformanceQuantised(t *testing.T) {
	vectortest.Run(t, func(t *testing.T) vector.Store { return openLocal(t, t.TempDir(), vector.WithExactMax(0)) })
}

func TestLocalConformanceSpilled(t *testing.T) {
	vectortest.Run(t, func(t *testing.T) vector.Store {
		return openLocal(t, t.TempDir(), vector.WithExactMax(0), vector.WithSpillMin(0))
	})
}

func TestLocalReopen(t *testing.T) {
	for _, c := range []struct {
		name string
		opts []vector.LocalOption
	}{
		{"exact", nil},
		{"quantised", []vector.LocalOption{vector.WithExactMax(0)}},
		{"spilled", []vector.LocalOption{vector.WithExactMax(0), vector.WithSpillMin(0)}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			vectortest.RunReopen(t,
				func(t *testing.T) vector.Store { return openLocal(t, dir, c.opts...) },
				func(t *testing.T, s vector.Store) vector.Store {
					if err := s.Close(); err != nil {
						t.Fatal(err)
					}
					return openLocal(t, dir, c.opts...)
				})
		})
	}
}
