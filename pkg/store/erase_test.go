package store_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/membus/membus/pkg/store"
	"github.com/membus/membus/pkg/testenv"
)

// TestErasedTextLeavesNoSQLiteFile: after an erasure and Checkpoint, the erased user's text is
// in no file of the SQLite database — not in the database's free pages (secure_delete), not in
// the WAL (truncated) — while the store is open and after it is closed; another user's text
// is still there (the scan can find what it looks for).
func TestErasedTextLeavesNoSQLiteFile(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := store.OpenSQLite(ctx, filepath.Join(dir, "m.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const erased, kept = "ErasedMarker7f3a", "KeptMarker41c9"
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	long := strings.Repeat("padding words to spill into overflow pages ", 300) // > one 4 KiB page
	var turns []store.Turn
	for i, u := range []struct{ user, session, marker string }{
		{"gone", "s-gone-1", erased}, {"gone", "s-gone-2", erased}, {"stays", "s-stays", kept},
	} {
		tr := turn("acme", u.session, "e-"+u.session, uint64(i+1),
			msg("m1", 0, "I live in "+u.marker+".", t0), msg("m2", 1, long+u.marker+long, t0))
		tr.UserID = u.user
		turns = append(turns, tr)
	}
	if _, err := s.ApplyTurns(ctx, thresholdTrigger(1<<30), turns); err != nil {
		t.Fatal(err)
	}
	if got := testenv.FilesHolding(t, dir, erased); len(got) == 0 {
		t.Fatal("the erased marker is in no file before the erasure: the scan proves nothing")
	}
	if err := s.WriteTombstone(ctx, "acme", "gone", ""); err != nil {
		t.Fatal(err)
	}
	noSubjects := func(string) []string { return nil }
	if _, err := s.EraseData(ctx, "acme", "gone", "", noSubjects); err != nil {
		t.Fatal(err)
	}
	if err := s.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	for _, when := range []string{"open", "closed"} {
		if when == "closed" {
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
		}
		if got := testenv.FilesHolding(t, dir, erased); len(got) != 0 {
			t.Errorf("store %s: the erased user's text is still in %v", when, got)
		}
		if got := testenv.FilesHolding(t, dir, kept); len(got) == 0 {
			t.Errorf("store %s: the other user's text is in no file", when)
		}
	}
}
