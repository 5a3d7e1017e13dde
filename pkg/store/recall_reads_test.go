package store_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/membus/membus/pkg/store"
)

// seedRecallReads writes n memories of one user (each stated in its own message of one session)
// and returns the store, the memories' ids and their sources.
func seedRecallReads(tb testing.TB, n int) (*store.Store, []string, []store.Source) {
	tb.Helper()
	ctx := context.Background()
	s, err := store.OpenSQLite(ctx, filepath.Join(tb.TempDir(), "m.db"))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var msgs []store.Message
	for i := range n {
		msgs = append(msgs, msg(fmt.Sprintf("m%d", i), i, "message", t0))
	}
	if _, err := s.ApplyTurns(ctx, nil, []store.Turn{turn("acme", "s1", "e1", 1, msgs...)}); err != nil {
		tb.Fatal(err)
	}
	epoch, err := s.AcquireEpoch(ctx, "acme", "s1")
	if err != nil {
		tb.Fatal(err)
	}
	var ids []string
	var srcs []store.Source
	emb := make([]float32, 384)
	for b := 0; b < n; b += 1000 {
		a := store.Archive{ID: fmt.Sprintf("00000000-0000-0000-0000-%012d", b+1), AccountID: "acme", SessionID: "s1", UserID: "u1",
			FromSeq: int64(b + 1), ToSeq: int64(b + 1), Kind: "compact", RequestID: fmt.Sprintf("r%d", b)}
		if err := s.CreateArchive(ctx, epoch, a, nil); err != nil {
			tb.Fatal(err)
		}
		var mems []store.Memory
		for i := b; i < min(b+1000, n); i++ {
			src := store.Source{SessionID: "s1", MessageID: fmt.Sprintf("m%d", i)}
			m := store.Memory{ID: fmt.Sprintf("10000000-0000-0000-0000-%012d", i), AccountID: "acme", UserID: "u1", Scope: "user", Category: "fact",
				Value: "v", Abstract: "a", Text: fmt.Sprintf("memory number %d with some words", i), Sources: []store.Source{src}, ValidFrom: t0,
				ContentHash: "h", Embedding: emb, EmbedModel: "test-384"}
			mems = append(mems, m)
			ids, srcs = append(ids, m.ID), append(srcs, src)
		}
		if err := s.SaveMemories(ctx, epoch, a, mems, nil, nil); err != nil {
			tb.Fatal(err)
		}
	}
	return s, ids, srcs
}

// BenchmarkRecallRows is recall's read of its hit rows: 90 of 10,000 memories.
func BenchmarkRecallRows(b *testing.B) {
	s, ids, _ := seedRecallReads(b, 10000)
	r := rand.New(rand.NewPCG(1, 2))
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		pick := make([]string, 90)
		for i := range pick {
			pick[i] = ids[r.IntN(len(ids))]
		}
		if _, err := s.RecallRows(ctx, "acme", "u1", pick); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMessagePlaces is recall's placing of its memory candidates: 60 of 10,000 messages.
func BenchmarkMessagePlaces(b *testing.B) {
	s, _, srcs := seedRecallReads(b, 10000)
	r := rand.New(rand.NewPCG(1, 2))
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		pick := make([]store.Source, 60)
		for i := range pick {
			pick[i] = srcs[r.IntN(len(srcs))]
		}
		if _, err := s.MessagePlaces(ctx, "acme", pick); err != nil {
			b.Fatal(err)
		}
	}
}
