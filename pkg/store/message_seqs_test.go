package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/membus/membus/pkg/store"
)

func TestMessageSeqs(t *testing.T) {
	backends(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
		turns := []store.Turn{
			turn("acme", "s1", "e1", 1, msg("m1", 0, "one", t0), msg("m2", 1, "two", t0)),
			turn("acme", "s2", "e2", 2, msg("m1", 0, "s2 one", t0)),
			turn("other", "s1", "e3", 3, msg("m9", 0, "foreign", t0)),
		}
		if _, err := s.ApplyTurns(ctx, thresholdTrigger(1000), turns); err != nil {
			t.Fatal(err)
		}
		got, err := s.MessageSeqs(ctx, "acme", []store.Source{
			{SessionID: "s1", MessageID: "m2"},
			{SessionID: "s2", MessageID: "m1"},
			{SessionID: "s1", MessageID: "m9"},      // another account's message
			{SessionID: "s1", MessageID: "missing"}, // not stored
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 {
			t.Fatalf("got %v, want the two messages of acme asked for (s1/m1 is in the IN lists' product, not asked)", got)
		}
		if got[store.Source{SessionID: "s1", MessageID: "m2"}] != 2 || got[store.Source{SessionID: "s2", MessageID: "m1"}] != 1 {
			t.Fatalf("seqs = %v, want s1/m2 at 2 and s2/m1 at 1", got)
		}
		if none, err := s.MessageSeqs(ctx, "acme", nil); err != nil || len(none) != 0 {
			t.Fatalf("no sources: %v, %v", none, err)
		}
	})
}
