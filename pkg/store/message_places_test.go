package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/membus/membus/pkg/store"
)

func TestMessagePlaces(t *testing.T) {
	backends(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
		turns := []store.Turn{
			turn("acme", "s1", "e1", 1, msg("m1", 0, "one", t0), named(msg("m2", 1, "two", t0), "Melanie")),
			turn("acme", "s2", "e2", 2, msg("m1", 0, "s2 one", t0)),
			turn("other", "s1", "e3", 3, msg("m9", 0, "foreign", t0)),
		}
		if _, err := s.ApplyTurns(ctx, thresholdTrigger(1000), turns); err != nil {
			t.Fatal(err)
		}
		got, err := s.MessagePlaces(ctx, "acme", []store.Source{
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
		if got[store.Source{SessionID: "s1", MessageID: "m2"}] != (store.MessagePlace{Seq: 2, Role: "user", Name: "Melanie"}) ||
			got[store.Source{SessionID: "s2", MessageID: "m1"}] != (store.MessagePlace{Seq: 1, Role: "user"}) {
			t.Fatalf("places = %v, want s1/m2 at 2 said by Melanie and s2/m1 at 1 by the user", got)
		}
		if none, err := s.MessagePlaces(ctx, "acme", nil); err != nil || len(none) != 0 {
			t.Fatalf("no sources: %v, %v", none, err)
		}
	})
}

// TestLookupListValues: the reads that look up a list of ids (MessagePlaces, MemoriesByID) find
// ids that JSON escapes or would change (SQLite passes the list as one JSON array, unless a
// value is not valid UTF-8), and a repeated id once.
func TestLookupListValues(t *testing.T) {
	cases := []struct {
		name, id string
		sqlite   bool // only where the database stores it
	}{
		{"quote and backslash", `m"1\`, false},
		{"HTML characters", "m<1>&", false},
		{"non-ASCII", "mé—🎉", false},
		{"control character", "m\x01\n", false},
		{"invalid UTF-8 keeps the IN list", "m\xff\xfe", true},
	}
	backends(t, func(t *testing.T, s *store.Store) {
		for i, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				if c.sqlite && s.Dialect() != store.SQLite {
					t.Skip("MySQL's utf8mb4 stores valid UTF-8 only")
				}
				ctx := context.Background()
				session := fmt.Sprintf("s-%d", i)
				t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
				if _, err := s.ApplyTurns(ctx, nil, []store.Turn{turn("acme", session, "e-"+session, uint64(i+1), msg(c.id, 0, "one", t0), msg("plain", 1, "two", t0))}); err != nil {
					t.Fatal(err)
				}
				src := store.Source{SessionID: session, MessageID: c.id}
				got, err := s.MessagePlaces(ctx, "acme", []store.Source{src, src, {SessionID: session, MessageID: "missing"}})
				if err != nil {
					t.Fatal(err)
				}
				if len(got) != 1 || got[src].Seq != 1 {
					t.Fatalf("seqs = %v, want %q at 1", got, c.id)
				}
			})
		}
	})
}

func named(m store.Message, name string) store.Message {
	m.Name = name
	return m
}
