package store_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/membus/membus/pkg/store"
	"github.com/membus/membus/pkg/testenv"
)

// BenchmarkApplyTurns stores the batch ingest stores under `membus bench ingest`: 400 turns of
// 2 messages over 50 sessions of one user, new message ids every batch. ns/op is one batch's
// transaction (800 messages).
func BenchmarkApplyTurns(b *testing.B) {
	b.Run("sqlite", func(b *testing.B) {
		s, err := store.OpenSQLite(context.Background(), filepath.Join(b.TempDir(), "m.db"))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { s.Close() })
		benchApplyTurns(b, s)
	})
	b.Run("mysql", func(b *testing.B) {
		s, err := store.OpenMySQL(context.Background(), testenv.MySQLDSN(b))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { s.Close() })
		benchApplyTurns(b, s)
	})
}

func benchApplyTurns(b *testing.B, s *store.Store) {
	const sessions, turns = 50, 400
	ctx := context.Background()
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	text := "The quick brown fox jumps over the lazy dog while we plan the trip to Lisbon in May."
	var seq uint64
	b.ResetTimer()
	for n := range b.N {
		batch := make([]store.Turn, 0, turns)
		for i := range turns {
			seq++
			sess := fmt.Sprintf("s-%03d", i%sessions)
			ev := fmt.Sprintf("e-%d-%d", n, i)
			batch = append(batch, turn("bench", sess, ev, seq, msg(ev+"-0", 0, text, t0), msg(ev+"-1", 1, text, t0)))
		}
		res, err := s.ApplyTurns(ctx, nil, batch)
		if err != nil {
			b.Fatal(err)
		}
		if res[0].Stored != 2 {
			b.Fatalf("first turn: %+v, want 2 stored", res[0])
		}
	}
}
