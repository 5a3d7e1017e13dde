package vector_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/membus/membus/pkg/testenv"
	"github.com/membus/membus/pkg/vector"
	"github.com/membus/membus/pkg/vector/vectortest"
)

func point(acct, user, text string, i int) vector.Point {
	v := make([]float32, vectortest.Dim)
	v[i%vectortest.Dim] = 1
	v[(i+1)%vectortest.Dim] = float32(i%5) * 0.1
	return vector.Point{ID: uuid.NewString(), AccountID: acct, UserID: user, Scope: "user", Kind: "memory", Text: text, Vector: v}
}

func filesWith(t *testing.T, dir, suffix string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "g*", "*"+suffix))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestLocalOpenChecksModel(t *testing.T) {
	dir := t.TempDir()
	l := openLocal(t, dir)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		model   string
		dim     int
		wantErr error
	}{
		{"same model and dim opens", vectortest.Model, vectortest.Dim, nil},
		{"another model is refused", "hash-v1-384", vectortest.Dim, vector.ErrModelMismatch},
		{"another dimension is refused", vectortest.Model, 16, vector.ErrModelMismatch},
		{"empty model adopts the stored one", "", 0, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := vector.OpenLocal(dir, tc.model, tc.dim)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if err == nil {
				if s.Model() != vectortest.Model || s.Dim() != vectortest.Dim {
					t.Fatalf("opened %s/%d", s.Model(), s.Dim())
				}
				s.Close()
			}
		})
	}
	model, dim, err := vector.LocalModel(dir)
	if err != nil || model != vectortest.Model || dim != vectortest.Dim {
		t.Fatalf("LocalModel = %q %d %v", model, dim, err)
	}
	if _, _, err := vector.LocalModel(t.TempDir()); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("LocalModel of an empty dir: %v", err)
	}
	if _, err := vector.OpenLocal(t.TempDir(), "", 0); err == nil {
		t.Fatal("new index without a model opened")
	}
}

func TestLocalTornLogTailIsCut(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	l := openLocal(t, dir)
	a := point("acct", "u1", "kept", 0)
	b := point("acct", "u1", "torn", 1)
	for _, p := range []vector.Point{a, b} {
		if err := l.Upsert(ctx, vectortest.Model, []vector.Point{p}); err != nil {
			t.Fatal(err)
		}
	}
	logs := filesWith(t, dir, ".log")
	if len(logs) != 1 {
		t.Fatalf("log files %v", logs)
	}
	// Simulate a crash mid-append: no Close, and the last record loses its
	// final bytes.
	raw, _ := os.ReadFile(logs[0])
	if err := os.WriteFile(logs[0], raw[:len(raw)-5], 0o644); err != nil {
		t.Fatal(err)
	}

	l2, err := vector.OpenLocal(dir, vectortest.Model, vectortest.Dim)
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	if _, err := l2.Get(ctx, "acct", "u1", a.ID); err != nil {
		t.Fatalf("record before the torn one lost: %v", err)
	}
	if _, err := l2.Get(ctx, "acct", "u1", b.ID); !errors.Is(err, vector.ErrNotFound) {
		t.Fatalf("torn record: err = %v", err)
	}
	if p := l2.Problems(); len(p) != 1 || !strings.Contains(p[0], "torn tail") {
		t.Fatalf("problems %v", p)
	}
	// The store keeps appending after the cut.
	c := point("acct", "u1", "after", 2)
	if err := l2.Upsert(ctx, vectortest.Model, []vector.Point{c}); err != nil {
		t.Fatal(err)
	}
	l2.Close()
	l3 := openLocal(t, dir)
	for _, id := range []string{a.ID, c.ID} {
		if _, err := l3.Get(ctx, "acct", "u1", id); err != nil {
			t.Fatalf("%s after second reopen: %v", id, err)
		}
	}
}

func TestLocalCorruptSnapshotIsDroppedAndReported(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	l := openLocal(t, dir)
	if err := l.Upsert(ctx, vectortest.Model, []vector.Point{point("acct", "u1", "x", 0), point("acct", "u2", "y", 1)}); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil { // snapshots both partitions
		t.Fatal(err)
	}
	snaps := filesWith(t, dir, ".snap")
	if len(snaps) != 2 {
		t.Fatalf("snapshots %v", snaps)
	}
	raw, _ := os.ReadFile(snaps[0])
	raw[len(raw)/2] ^= 0xff
	if err := os.WriteFile(snaps[0], raw, 0o644); err != nil {
		t.Fatal(err)
	}
	l2 := openLocal(t, dir)
	if len(l2.Problems()) != 1 {
		t.Fatalf("problems %v", l2.Problems())
	}
	n, _, _ := l2.Digest(ctx, "acct")
	if n != 1 {
		t.Fatalf("count after dropping a damaged partition = %d, want 1", n)
	}
}

func TestLocalCompactionKeepsEverything(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	l := openLocal(t, dir)
	var ids []string
	for i := range 150 { // more than the compaction threshold of log records
		p := point("acct", "u1", fmt.Sprintf("note number %d", i), i)
		ids = append(ids, p.ID)
		if err := l.Upsert(ctx, vectortest.Model, []vector.Point{p}); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Delete(ctx, "acct", "u1", ids[:10]); err != nil {
		t.Fatal(err)
	}
	if len(filesWith(t, dir, ".snap")) != 1 {
		t.Fatal("no snapshot written after many log records")
	}
	// reopen without Close: snapshot + remaining log
	l2 := openLocal(t, dir)
	n, sum, err := l2.Digest(ctx, "acct")
	if err != nil || n != 140 {
		t.Fatalf("digest after reopen: %d %v", n, err)
	}
	if sum != vector.DigestIDs(ids[10:]) {
		t.Fatal("digest differs from the ids written")
	}
}

func TestLocalRebuildReplacesEverything(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	l := openLocal(t, dir)
	stale := point("acct", "u1", "stale", 0)
	if err := l.Upsert(ctx, vectortest.Model, []vector.Point{stale}); err != nil {
		t.Fatal(err)
	}
	fromSQL := []vector.Point{point("acct", "u1", "fresh one", 1), point("acct", "u2", "fresh two", 2), point("other", "u1", "fresh three", 3)}
	if err := l.Rebuild(ctx, fromSQL); err != nil {
		t.Fatal(err)
	}
	check := func(s *vector.Local) {
		t.Helper()
		if _, err := s.Get(ctx, "acct", "u1", stale.ID); !errors.Is(err, vector.ErrNotFound) {
			t.Fatalf("stale point survived rebuild: %v", err)
		}
		n, sum, _ := s.Digest(ctx, "acct")
		if n != 2 || sum != vector.DigestIDs([]string{fromSQL[0].ID, fromSQL[1].ID}) {
			t.Fatalf("digest after rebuild: %d", n)
		}
		if all, _, _ := s.Digest(ctx, ""); all != 3 {
			t.Fatalf("whole-store count %d", all)
		}
		hits, err := s.Search(ctx, vector.Filter{AccountID: "acct", UserID: "u2"}, nil, "fresh", 5)
		if err != nil || len(hits) != 1 {
			t.Fatalf("keyword index after rebuild: %v %v", hits, err)
		}
	}
	check(l)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l2 := openLocal(t, dir)
	check(l2)
	// writes after a rebuild land in the new generation
	if err := l2.Upsert(ctx, vectortest.Model, []vector.Point{point("acct", "u3", "later", 4)}); err != nil {
		t.Fatal(err)
	}
	if err := l2.Close(); err != nil {
		t.Fatal(err)
	}
	l3 := openLocal(t, dir)
	if n, _ := l3.Count(ctx, "acct"); n != 3 {
		t.Fatalf("count after rebuild + upsert + reopen = %d, want 3", n)
	}
	gens, _ := filepath.Glob(filepath.Join(dir, "g*"))
	if len(gens) != 1 {
		t.Fatalf("generations left behind: %v", gens)
	}
	bad := point("acct", "", "no user", 0)
	if err := l3.Rebuild(ctx, []vector.Point{bad}); !errors.Is(err, vector.ErrMissingTenant) {
		t.Fatalf("rebuild with a tenantless point: %v", err)
	}
}

func TestLocalIDsAreCanonical(t *testing.T) {
	ctx := context.Background()
	l := openLocal(t, t.TempDir())
	p := point("acct", "u1", "x", 0)
	p.ID = strings.ToUpper(p.ID)
	if err := l.Upsert(ctx, vectortest.Model, []vector.Point{p}); err != nil {
		t.Fatal(err)
	}
	got, err := l.Get(ctx, "acct", "u1", p.ID)
	if err != nil || got.ID != strings.ToLower(p.ID) {
		t.Fatalf("get by upper-case id: %q %v", got.ID, err)
	}
	bad := point("acct", "u1", "x", 0)
	bad.ID = "memory-1"
	if err := l.Upsert(ctx, vectortest.Model, []vector.Point{bad}); !errors.Is(err, vector.ErrInvalid) {
		t.Fatalf("non-UUID id: %v", err)
	}
	short := point("acct", "u1", "x", 0)
	short.Vector = short.Vector[:3]
	if err := l.Upsert(ctx, vectortest.Model, []vector.Point{short}); !errors.Is(err, vector.ErrInvalid) {
		t.Fatalf("wrong dimension: %v", err)
	}
	if _, err := l.Search(ctx, vector.Filter{AccountID: "acct", UserID: "u1"}, []float32{1}, "", 3); !errors.Is(err, vector.ErrInvalid) {
		t.Fatalf("query of wrong dimension: %v", err)
	}
}

func TestLocalConcurrentUse(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	l := openLocal(t, dir)
	var wg sync.WaitGroup
	const writers, each = 4, 40
	for w := range writers {
		wg.Add(2)
		go func() {
			defer wg.Done()
			user := fmt.Sprintf("u%d", w%2) // two writers share each partition
			for i := range each {
				if err := l.Upsert(ctx, vectortest.Model, []vector.Point{point("acct", user, "shared words here", i)}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
		go func() {
			defer wg.Done()
			for i := range each {
				f := vector.Filter{AccountID: "acct", UserID: fmt.Sprintf("u%d", i%2)}
				if _, err := l.Search(ctx, f, point("", "", "", i).Vector, "shared", 5); err != nil {
					t.Error(err)
					return
				}
				if _, _, err := l.Scroll(ctx, f, "", 10); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if n, _ := l.Count(ctx, "acct"); n != writers*each {
		t.Fatalf("count %d, want %d", n, writers*each)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Search(ctx, vector.Filter{AccountID: "acct", UserID: "u0"}, nil, "x", 1); !errors.Is(err, vector.ErrClosed) {
		t.Fatalf("search after close: %v", err)
	}
	if n, _ := openLocal(t, dir).Count(ctx, "acct"); n != writers*each {
		t.Fatalf("count after reopen %d", n)
	}
}

func BenchmarkLocalSearch(b *testing.B) {
	ctx := context.Background()
	l, err := vector.OpenLocal(b.TempDir(), vectortest.Model, vectortest.Dim)
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	var pts []vector.Point
	for i := range 2000 {
		pts = append(pts, point("acct", "u1", fmt.Sprintf("memory %d about topic %d", i, i%37), i))
	}
	if err := l.Upsert(ctx, vectortest.Model, pts); err != nil {
		b.Fatal(err)
	}
	f := vector.Filter{AccountID: "acct", UserID: "u1"}
	q := pts[7].Vector
	b.ReportAllocs()
	for b.Loop() {
		if _, err := l.Search(ctx, f, q, "topic 12", 24); err != nil {
			b.Fatal(err)
		}
	}
}

// TestLocalCompactLeavesNoDeletedText: after Delete and Compact, the deleted points' text is
// in no file of the index — whether the deletes emptied the tenant's partition (a user erased)
// or left points in it (one session erased) — while the kept points' text is still on disk
// and every point survives a reopen. Without Compact the log (and an earlier snapshot) still
// hold the deleted text.
func TestLocalCompactLeavesNoDeletedText(t *testing.T) {
	const gone, kept = "GoneMarker5d1e", "KeptMarker9b2c"
	for _, tc := range []struct {
		name      string
		keptCount int // points of the tenant that stay
	}{
		{"the deletes empty the partition (a user erased)", 0},
		{"the deletes leave points in the partition (one session erased)", 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			ctx := context.Background()
			l := openLocal(t, dir)
			var del []string
			for i := range 100 { // past the snapshot threshold: the marker is in a snapshot and a log
				p := point("acct", "u1", fmt.Sprintf("note %d about %s", i, gone), i)
				if i < tc.keptCount {
					p.Text = fmt.Sprintf("note %d about %s", i, kept)
				} else {
					del = append(del, p.ID)
				}
				if err := l.Upsert(ctx, vectortest.Model, []vector.Point{p}); err != nil {
					t.Fatal(err)
				}
			}
			if err := l.Delete(ctx, "acct", "u1", del); err != nil {
				t.Fatal(err)
			}
			if len(testenv.FilesHolding(t, dir, gone)) == 0 {
				t.Fatal("before Compact no file holds the deleted text: the test proves nothing")
			}
			if err := l.Compact(ctx, "acct", "u1"); err != nil {
				t.Fatal(err)
			}
			if got := testenv.FilesHolding(t, dir, gone); len(got) != 0 {
				t.Fatalf("after Compact the deleted text is still in %v", got)
			}
			if tc.keptCount > 0 && len(testenv.FilesHolding(t, dir, kept)) == 0 {
				t.Fatal("after Compact the kept points' text is in no file")
			}
			l2 := openLocal(t, dir) // reopen without Close: what the files hold
			if n, _, err := l2.Digest(ctx, "acct"); err != nil || n != tc.keptCount {
				t.Fatalf("points after reopen = %d (%v), want %d", n, err, tc.keptCount)
			}
		})
	}
}
