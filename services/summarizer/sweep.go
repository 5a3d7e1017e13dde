package summarizer

import (
	"context"
	"time"

	"github.com/membus/membus/pkg/contract"
	"github.com/membus/membus/pkg/embed"
	"github.com/membus/membus/pkg/lock"
	"github.com/membus/membus/pkg/memory"
	"github.com/membus/membus/pkg/store"
	"github.com/membus/membus/pkg/vector"
)

const sweepPage = 500

// sweep is the scheduled dedup sweep (docs/design.md §6 "Conflicts first, then dedup"): it looks only at
// the memories changed since its watermark, takes each one's candidates from the vector
// index's top-k (dense and keyword; never all pairs), re-reads them from SQL (the index may
// lag) and marks near-duplicates by the extraction rules (memory.NearDuplicate): the newer of
// the two becomes duplicate_of the older, which gets its sources. Each user's memories are
// swept under that user's merge lock. It returns the new watermark.
func (sc *Scheduler) sweep(ctx context.Context, _ Span) (time.Time, error) {
	st, err := sc.d.Store.Job(ctx, JobDedup)
	if err != nil {
		return time.Time{}, err
	}
	until := sc.d.Now()
	if sc.d.Vectors == nil {
		return until, nil
	}
	after, afterID := st.Watermark, ""
	seen := 0
	for seen < sc.cfg.SweepMax {
		page, err := sc.d.Store.ChangedMemories(ctx, after, afterID, until, min(sweepPage, sc.cfg.SweepMax-seen))
		if err != nil {
			return time.Time{}, err
		}
		if len(page) == 0 {
			return until, nil
		}
		byUser := map[[2]string][]store.Memory{}
		var order [][2]string
		for _, m := range page {
			k := [2]string{m.AccountID, m.UserID}
			if _, ok := byUser[k]; !ok {
				order = append(order, k)
			}
			byUser[k] = append(byUser[k], m)
		}
		for _, k := range order {
			if err := sc.sweepUser(ctx, k[0], k[1], byUser[k]); err != nil {
				return time.Time{}, err
			}
		}
		seen += len(page)
		last := page[len(page)-1]
		after, afterID = last.UpdatedAt, last.ID
	}
	// Bounded: the rest is swept next time, from just before the last one looked at (rows
	// changed in that same microsecond are looked at again, which is harmless).
	return after.Add(-time.Microsecond), nil
}

func (sc *Scheduler) sweepUser(ctx context.Context, account, user string, changed []store.Memory) error {
	lease, err := sc.d.Locker.Acquire(ctx, lock.MergeKey(account, user), lock.MergeTTL)
	if err != nil {
		return err // busy: extraction is merging this user now; the run is retried
	}
	defer lock.Release(context.WithoutCancel(ctx), lease, sc.log)
	ctx = lease.Context()
	gone := map[string]bool{}
	for _, m := range changed {
		if gone[m.ID] {
			continue
		}
		f := vector.Filter{AccountID: account, UserID: user, Kinds: []string{contract.KindMemory}, Scopes: []string{m.Scope}}
		if m.Scope == contract.ScopeAgent {
			f.AgentID = m.AgentID
		}
		var vec []float32
		if len(m.Embedding) > 0 && m.EmbedModel == sc.d.Vectors.Model() {
			vec = m.Embedding
		}
		hits, err := sc.d.Vectors.Search(ctx, f, vec, m.Text, sc.cfg.SweepTopK)
		if err != nil {
			return err
		}
		var ids []string
		for _, h := range hits {
			if h.ID != m.ID && !gone[h.ID] {
				ids = append(ids, h.ID)
			}
		}
		cands, err := sc.d.Store.MemoriesByID(ctx, account, user, ids)
		if err != nil {
			return err
		}
		rank := map[string]int{}
		for i, id := range ids {
			rank[id] = i
		}
		best := -1
		var reason string
		for i, e := range cands {
			if !e.Active() || e.Category == memory.Digest || sameSlotNewValue(e, m) {
				continue // conflicts are extraction's (superseded, never deduplicated)
			}
			mc := comparable(m)
			mc.DupCosine = embed.DuplicateCosine(sc.d.Embedder, 0) // the embedding model's threshold (0: the rules' own)
			r, ok := memory.NearDuplicate(comparable(e), mc)
			if ok && (best < 0 || rank[e.ID] < rank[cands[best].ID]) {
				best, reason = i, r
			}
		}
		if best < 0 {
			continue
		}
		keep, dup := cands[best], m
		if older(m, keep) {
			keep, dup = m, keep
		}
		ok, err := sc.d.Store.MarkDuplicate(ctx, account, user, dup.ID, keep.ID, nil)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		gone[dup.ID] = true
		sc.marked(reason)
		sc.log.Info("memory marked duplicate", "account", account, "user", user, "memory", dup.ID, "duplicate_of", keep.ID, "reason", reason)
		// Write-then-delete: the duplicate is filtered out of recall by its SQL state already,
		// so a failed delete loses nothing.
		if err := sc.d.Vectors.Delete(ctx, account, user, []string{dup.ID}); err != nil {
			sc.log.Warn("delete duplicate from the index", "memory", dup.ID, "err", err)
		}
	}
	return nil
}

// older reports whether a was created before b (the id breaks ties), i.e. a is the original.
func older(a, b store.Memory) bool {
	if !a.CreatedAt.Equal(b.CreatedAt) {
		return a.CreatedAt.Before(b.CreatedAt)
	}
	return a.ID < b.ID
}

// sameSlotNewValue is extraction's conflict rule: the same subject and attribute with another
// value or polarity.
func sameSlotNewValue(a, b store.Memory) bool {
	if a.Attribute == "" || b.Attribute == "" || a.Scope != b.Scope {
		return false
	}
	if memory.Normalize(a.Subject) != memory.Normalize(b.Subject) || memory.Normalize(a.Attribute) != memory.Normalize(b.Attribute) {
		return false
	}
	return memory.Normalize(a.Value) != memory.Normalize(b.Value) || a.Polarity != b.Polarity
}

// comparable is what the near-duplicate rules look at of a memory row.
func comparable(m store.Memory) memory.Comparable {
	return memory.Comparable{Scope: m.Scope, Category: m.Category, Subject: m.Subject, Attribute: m.Attribute, Value: m.Value,
		Polarity: m.Polarity, Text: m.Text, ContentHash: m.ContentHash, Embedding: m.Embedding,
		EventDay: memory.EventDay(m.Category, m.EventTime)}
}
