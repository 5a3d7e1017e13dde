package store_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/membus/membus/pkg/bus"
	"github.com/membus/membus/pkg/store"
)

// On SQLite a claim marks its rows in a transaction committed with synchronous=NORMAL: the
// marks land (and survive a reopen), and every connection of the pool is back at FULL, so no
// other transaction commits without its fsync.
func TestSQLiteClaimMarksWithoutLeavingTheFsyncOff(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "m.db")
	s, err := store.OpenSQLite(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	entries := []store.OutboxEntry{
		{ID: "e1", Subject: "membus.events.x.acme.s1", Payload: []byte(`{}`)},
		{ID: "e2", Subject: "membus.events.x.acme.s1", Payload: []byte(`{}`)},
	}
	if err := s.QueueEvents(ctx, entries); err != nil {
		t.Fatal(err)
	}
	for range 3 { // more claims than one connection would see
		if _, err := s.Outbox().Claim(ctx, 1, nil, func(context.Context, bus.OutboxRow) error { return nil }); err != nil {
			t.Fatal(err)
		}
	}
	// Hold every connection of the pool (4) at once and ask each.
	var conns []*sql.Conn
	for range 4 {
		c, err := s.DB().Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	for i, c := range conns {
		var mode int
		if err := c.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&mode); err != nil {
			t.Fatal(err)
		}
		if mode != 2 {
			t.Errorf("connection %d: synchronous %d, want 2 (FULL)", i, mode)
		}
		c.Close()
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = store.OpenSQLite(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if n, err := s.OutboxPending(ctx); err != nil || n != 0 {
		t.Fatalf("after reopening: %d rows pending (%v), want 0: the marks were lost", n, err)
	}
}
