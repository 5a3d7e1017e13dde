package summarizer

import (
	"testing"
	"time"

	"github.com/membus/membus/pkg/lock"
)

func TestDedupSweep(t *testing.T) {
	w := newWorld(t, local(2026, 11, 30, 12, 0))
	orig := w.remember("alice", "", "Caroline's team ships the billing release every Friday afternoon.", local(2026, 11, 30, 9, 0))
	dup := w.remember("alice", "", "Every Friday afternoon Caroline's team ships the billing release.", local(2026, 11, 30, 10, 0))
	boston := w.remember("alice", "", "Caroline lives in Boston.", local(2026, 11, 30, 10, 0))
	austin := w.remember("alice", "", "Caroline lives in Austin.", local(2026, 11, 30, 11, 0))
	// The same slot with another value is a conflict (extraction's), never a near-duplicate.
	for _, id := range []string{boston.ID, austin.ID} {
		if _, err := w.st.DB().ExecContext(w.ctx, "UPDATE memories SET attribute = 'lives in', value = ? WHERE id = ?", id, id); err != nil {
			t.Fatal(err)
		}
	}
	other := w.remember("bob", "", "Caroline's team ships the billing release every Friday afternoon.", local(2026, 11, 30, 10, 0))

	sc := w.replica("a")
	// The user's merge lock is held (extraction is merging): the sweep waits for a later tick.
	held, err := w.locker.Acquire(w.ctx, lock.MergeKey(acct, "alice"), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	w.clock.Set(local(2026, 12, 1, 1, 0))
	sc.Tick(w.ctx)
	if st, _ := w.st.Job(w.ctx, JobDedup); st.Bucket == "2026-11-30" {
		t.Fatal("the sweep completed while the merge lock was held")
	}
	held.Release(w.ctx)
	sc.Tick(w.ctx)

	rows := func(id, user string) (dupOf string, sources int) {
		m, err := w.st.GetMemory(w.ctx, acct, user, id)
		if err != nil {
			t.Fatal(err)
		}
		return m.DuplicateOf, len(m.Sources)
	}
	if d, _ := rows(dup.ID, "alice"); d != orig.ID {
		t.Errorf("the newer near-duplicate is duplicate_of %q, want the older %s", d, orig.ID)
	}
	if d, n := rows(orig.ID, "alice"); d != "" || n != 2 {
		t.Errorf("the original: duplicate_of %q, %d sources; want active with both sources", d, n)
	}
	for _, id := range []string{boston.ID, austin.ID} {
		if d, _ := rows(id, "alice"); d != "" {
			t.Errorf("a conflicting slot value was marked duplicate_of %s", d)
		}
	}
	if d, _ := rows(other.ID, "bob"); d != "" {
		t.Error("another user's memory was compared")
	}
	if _, err := w.vec.Get(w.ctx, acct, "alice", dup.ID); err == nil {
		t.Error("the duplicate is still in the index")
	}
	st, _ := w.st.Job(w.ctx, JobDedup)
	if st.Bucket != "2026-11-30" || !st.Watermark.Equal(local(2026, 12, 1, 1, 0)) {
		t.Fatalf("dedup job %+v, want bucket 2026-11-30 and the watermark at the run", st)
	}

	// Only memories changed since the watermark are looked at: a near-duplicate pair written
	// behind it (as a lagging replica might) is left for extraction, a new one is swept.
	stale := w.remember("alice", "", "Alice keeps her bike in the garage next to the car.", local(2026, 11, 30, 8, 0))
	staleDup := w.remember("alice", "", "Alice keeps her bike in the garage next to her car.", local(2026, 11, 30, 8, 30))
	fresh := w.remember("alice", "", "Caroline's team ships the billing release every Friday afternoon now.", local(2026, 12, 1, 15, 0))
	w.clock.Set(local(2026, 12, 2, 1, 0))
	sc.Tick(w.ctx)
	if d, _ := rows(fresh.ID, "alice"); d != orig.ID {
		t.Errorf("a memory changed after the watermark: duplicate_of %q, want %s", d, orig.ID)
	}
	if d, _ := rows(staleDup.ID, "alice"); d != "" {
		t.Errorf("a memory unchanged since the watermark was swept (duplicate_of %s of %s)", d, stale.ID)
	}
}
