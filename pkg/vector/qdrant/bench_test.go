package qdrant_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	mrand "math/rand/v2"
	neturl "net/url"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"
	qc "github.com/qdrant/go-client/qdrant"

	"github.com/membus/membus/pkg/testenv"
	"github.com/membus/membus/pkg/vector"
	"github.com/membus/membus/pkg/vector/qdrant"
)

// BenchmarkRealQdrantSearch is the filtered search recall makes, against a real Qdrant
// (MEMBUS_TEST_QDRANT_URL): one user's 20,000 points of 384 dimensions, 5 % of them agent-scoped,
// searched one scope at a time — the case that is slow without payload indexes on scope. Compare
// with pkg/vector's BenchmarkSearch (the local index) at 10,000 and 100,000 points.
func BenchmarkRealQdrantSearch(b *testing.B) {
	url := testenv.Qdrant(b)
	ctx := context.Background()
	var rb [6]byte
	_, _ = rand.Read(rb[:])
	cfg := qdrant.Config{URL: url, Collection: "membus_bench_" + hex.EncodeToString(rb[:]), Model: "bench-384", Dim: 384}
	s, err := qdrant.Open(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = s.Close()
		dropCollection(url, cfg.Collection)
	})
	r := mrand.New(mrand.NewPCG(1, 2))
	point := func() vector.Point {
		v := make([]float32, 384)
		for i := range v {
			v[i] = float32(r.NormFloat64())
		}
		return vector.Point{ID: uuid.NewString(), AccountID: "a", UserID: "u", Scope: "user", Kind: "memory",
			Category: "event", Text: fmt.Sprintf("memory %d about topic %d", r.IntN(1e6), r.IntN(500)), Vector: v,
			CreatedAt: time.Unix(1_700_000_000, 0)}
	}
	const n = 20_000
	for i := 0; i < n; i += 500 {
		batch := make([]vector.Point, 500)
		for j := range batch {
			batch[j] = point()
			if j%20 == 0 {
				batch[j].Scope = "agent"
				batch[j].AgentID = "g"
			}
		}
		if err := s.Upsert(ctx, "bench-384", batch); err != nil {
			b.Fatal(err)
		}
	}
	qs := make([]vector.Point, 64)
	for i := range qs {
		qs[i] = point()
	}
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		q := qs[i%len(qs)]
		for _, scope := range []string{"user", "agent", "archive"} {
			f := vector.Filter{AccountID: "a", UserID: "u", Scopes: []string{scope}}
			if _, err := s.Search(ctx, f, q.Vector, q.Text, 24); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// dropCollection deletes a test's collection from a real server (best effort: the name is
// random, so a leftover never meets another run).
func dropCollection(url, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	u, err := neturl.Parse(url)
	if err != nil {
		return
	}
	port, _ := strconv.Atoi(u.Port())
	c, err := qc.NewClient(&qc.Config{Host: u.Hostname(), Port: port, UseTLS: u.Scheme == "https",
		APIKey: u.Query().Get("api-key"), SkipCompatibilityCheck: true})
	if err != nil {
		return
	}
	defer c.Close()
	_ = c.DeleteCollection(ctx, name)
}
