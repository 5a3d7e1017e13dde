package store_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/membus/membus/pkg/bus"
	"github.com/membus/membus/pkg/store"
)

func TestOutboxBacklog(t *testing.T) {
	backends(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		n, oldest, err := s.OutboxBacklog(ctx)
		if err != nil || n != 0 || !oldest.IsZero() {
			t.Fatalf("empty outbox: backlog = %d, oldest %v, err %v; want 0, zero, nil", n, oldest, err)
		}
		before := time.Now().Add(-time.Second)
		entries := []store.OutboxEntry{
			{ID: "backlog-1", Subject: "membus.events.x.acme.s1", Payload: []byte(`{}`)},
			{ID: "backlog-2", Subject: "membus.events.x.acme.s2", Payload: []byte(`{}`)},
			{ID: "backlog-3", Subject: "membus.events.x.acme.s3", Payload: []byte(`{}`)},
		}
		for _, e := range entries {
			if err := s.QueueEvents(ctx, []store.OutboxEntry{e}); err != nil {
				t.Fatal(err)
			}
		}
		n, oldest, err = s.OutboxBacklog(ctx)
		if err != nil || n != 3 {
			t.Fatalf("backlog = %d, %v; want 3", n, err)
		}
		if oldest.Before(before) || oldest.After(time.Now()) {
			t.Errorf("oldest = %v, want within the last second", oldest)
		}
		// The relay publishes one row: the backlog shrinks by one.
		if _, err := s.Outbox().Claim(ctx, 1, nil, func(context.Context, bus.OutboxRow) error { return nil }); err != nil {
			t.Fatal(err)
		}
		if n, _, _ = s.OutboxBacklog(ctx); n != 2 {
			t.Errorf("backlog after one publish = %d, want 2", n)
		}
	})
}

// TestOutboxClaimBySubject: a relay claims only the rows under its subject prefixes (what its
// NATS user may publish); nil claims every row, an empty list none. A prefix is matched as a
// plain string: its "_" is no wildcard.
func TestOutboxClaimBySubject(t *testing.T) {
	backends(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		for i, tc := range []struct {
			name     string
			subjects func(p string) []string // of the case's own prefix, so cases do not meet
			want     []string                // the claimed rows' kinds
		}{
			{"nil claims every row", func(string) []string { return nil }, []string{"commit", "event", "lookalike"}},
			{"one prefix claims its rows only", func(p string) []string { return []string{p + ".commits."} }, []string{"commit"}},
			{"two prefixes claim both", func(p string) []string { return []string{p + ".commits.", p + ".events."} }, []string{"commit", "event"}},
			{"an empty list claims nothing", func(string) []string { return []string{} }, nil},
		} {
			t.Run(tc.name, func(t *testing.T) {
				p := "c" + string(rune('0'+i)) + "_app"
				rows := map[string]string{ // subject → kind
					p + ".commits.acme.s1":                             "commit",
					p + ".events.memory_upserted.acme.s1":              "event",
					"c" + string(rune('0'+i)) + "xapp.commits.acme.s1": "lookalike", // "_" of the prefix as a LIKE wildcard would match it
				}
				var entries []store.OutboxEntry
				for subject, kind := range rows {
					entries = append(entries, store.OutboxEntry{ID: p + "-" + kind, Subject: subject, Payload: []byte(`{}`)})
				}
				if err := s.QueueEvents(ctx, entries); err != nil {
					t.Fatal(err)
				}
				var got []string
				if _, err := s.Outbox().Claim(ctx, 100, tc.subjects(p), func(_ context.Context, r bus.OutboxRow) error {
					got = append(got, rows[r.Subject])
					return nil
				}); err != nil {
					t.Fatal(err)
				}
				slices.Sort(got)
				if !slices.Equal(got, tc.want) {
					t.Errorf("claimed %v, want %v", got, tc.want)
				}
				// Whatever is left belongs to the next claim without a filter.
				if _, err := s.Outbox().Claim(ctx, 100, nil, func(context.Context, bus.OutboxRow) error { return nil }); err != nil {
					t.Fatal(err)
				}
			})
		}
	})
}
