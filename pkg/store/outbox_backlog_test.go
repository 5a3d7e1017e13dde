package store_test

import (
	"context"
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
