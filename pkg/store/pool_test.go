package store_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/membus/membus/pkg/store"
)

// TestSQLiteKeepsItsConnections holds the whole pool at once, as a recall's parallel reads may,
// gives it back, and does it again: none is closed on the way, so no read pays for opening one.
func TestSQLiteKeepsItsConnections(t *testing.T) {
	ctx := context.Background()
	s, err := store.OpenSQLite(ctx, filepath.Join(t.TempDir(), "m.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	db := s.DB()
	for round := range 3 {
		var conns []*sql.Conn
		for range 4 {
			c, err := db.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var one int
			if err := c.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil {
				t.Fatal(err)
			}
			conns = append(conns, c)
		}
		for _, c := range conns {
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
		}
		st := db.Stats()
		if st.MaxIdleClosed != 0 || st.OpenConnections != 4 {
			t.Fatalf("round %d: %d connections closed as surplus idle ones, %d open; want 0 closed, 4 open", round, st.MaxIdleClosed, st.OpenConnections)
		}
	}
}
