package store_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/membus/membus/pkg/store"
)

// TestSQLiteWALIsCheckpointedInTheBackground: with wal_autocheckpoint off, what writers commit
// still reaches the database file (the store's checkpointer copies the WAL back while it
// runs), and writers in several goroutines at once all land, one gated transaction at a time.
func TestSQLiteWALIsCheckpointedInTheBackground(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "m.db")
	s, err := store.OpenSQLite(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	size := func() int64 {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	before := size()
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	text := strings.Repeat("a message long enough to fill pages quickly. ", 8)
	const writers, batches, turns = 4, 5, 50
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Go(func() {
			for b := range batches {
				var batch []store.Turn
				for i := range turns {
					ev := fmt.Sprintf("w%d-b%d-t%d", w, b, i)
					batch = append(batch, turn("acme", fmt.Sprintf("s-%d-%d", w, i%5), ev, uint64(i+1), msg(ev, 0, text, t0)))
				}
				if _, err := s.ApplyTurns(ctx, nil, batch); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("apply: %v", err)
	}
	var n int
	if err := s.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM messages").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if want := writers * batches * turns; n != want {
		t.Fatalf("%d messages stored, want %d", n, want)
	}
	// The database's pages are in the WAL; the checkpointer copies them into the database file
	// within walCheckpointEvery (200 ms) of the last commit: the file then holds every page.
	var pages, pageSize int64
	if err := s.DB().QueryRowContext(ctx, "PRAGMA page_count").Scan(&pages); err != nil {
		t.Fatal(err)
	}
	if err := s.DB().QueryRowContext(ctx, "PRAGMA page_size").Scan(&pageSize); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for size() < pages*pageSize {
		if time.Now().After(deadline) {
			t.Fatalf("the database file holds %d bytes of its %d pages of %d (%d before the writes): the WAL was not checkpointed",
				size(), pages, pageSize, before)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
