package summarizer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/membus/membus/pkg/bus"
	"github.com/membus/membus/pkg/contract"
	"github.com/membus/membus/pkg/memory"
	"github.com/membus/membus/pkg/projection"
	"github.com/membus/membus/pkg/store"
	"github.com/membus/membus/pkg/vector"
)

// digests builds the digest of every user and agent with memories or archives in s.
func (sc *Scheduler) digests(ctx context.Context, period string, s Span) error {
	owners, err := sc.d.Store.DigestOwners(ctx, s.Start, s.End)
	if err != nil {
		return err
	}
	for _, o := range owners {
		if err := sc.Digest(ctx, o, s); err != nil && !errors.Is(err, store.ErrTombstoned) {
			return fmt.Errorf("digest %s/%s/%s: %w", o.AccountID, o.UserID, o.AgentID, err)
		}
	}
	sc.d.KickOutbox()
	return nil
}

// Digest builds and stores the digest of one owner's bucket, and indexes it as a recallable
// memory of category digest (the same id: memory.DigestID), so a rebuilt digest replaces its
// predecessor. A digest built after its period closed is complete and is not built again (a
// replica that restarts mid-run goes on where the other stopped).
func (sc *Scheduler) Digest(ctx context.Context, o store.DigestOwner, s Span) error {
	id := memory.DigestID(o.AccountID, o.UserID, o.AgentID, s.Period, s.Bucket)
	if d, err := sc.d.Store.GetDigest(ctx, o.AccountID, o.UserID, o.AgentID, s.Period, s.Bucket); err == nil && !d.UpdatedAt.Before(s.End) && sc.indexed(ctx, o, id) {
		return nil
	} else if err != nil && !errors.Is(err, store.ErrNotFound) {
		return err
	}
	mems, err := sc.d.Store.PeriodMemories(ctx, o, s.Start, s.End, sc.cfg.DigestMemories)
	if err != nil {
		return err
	}
	archives, err := sc.d.Store.PeriodArchives(ctx, o, s.Start, s.End, sc.cfg.DigestArchives)
	if err != nil {
		return err
	}
	if len(mems) == 0 && len(archives) == 0 {
		return nil
	}
	sum, err := sc.d.Summarizer.Digest(ctx, DigestInput{Owner: o, Period: s.Period, Bucket: s.Bucket, Start: s.Start, End: s.End, Memories: mems, Archives: archives})
	if err != nil {
		return fmt.Errorf("%s summarizer: %w", sc.d.Summarizer.Name(), err)
	}
	scope := contract.ScopeUser
	if o.AgentID != "" {
		scope = contract.ScopeAgent
	}
	start := s.Start.UTC()
	m := store.Memory{ID: id, AccountID: o.AccountID, UserID: o.UserID, AgentID: o.AgentID, Scope: scope, Category: memory.Digest,
		Value: s.Period + " " + s.Bucket, Abstract: sum.Abstract, Text: sum.Text, Importance: 0.5, EventTime: &start, ValidFrom: start,
		ContentHash: memory.ContentHash(sum.Text)}
	if sc.d.Embedder != nil && sc.d.Vectors != nil {
		vecs, err := sc.d.Embedder.Embed(ctx, []string{sum.Text})
		if err != nil {
			return fmt.Errorf("embed digest: %w", err)
		}
		m.Embedding, m.EmbedModel = vecs[0], sc.d.Embedder.Model()
	}
	ev := contract.Event{V: contract.Version, EventID: "evt-summary_created-" + bus.MsgID(id, m.ContentHash)[:32], Kind: contract.EventSummaryCreated,
		AccountID: o.AccountID, UserID: o.UserID, AgentID: o.AgentID, SummaryID: id, Period: s.Period, Bucket: s.Bucket, At: sc.d.Now().UTC()}
	b, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	d := store.Digest{ID: id, AccountID: o.AccountID, UserID: o.UserID, AgentID: o.AgentID, Period: s.Period, Bucket: s.Bucket, Text: sum.Text}
	entry := store.OutboxEntry{ID: ev.EventID, Subject: sc.d.Names.Event(ev.Kind, o.AccountID, ""), Payload: b}
	if err := sc.d.Store.SaveDigest(ctx, d, m, []store.OutboxEntry{entry}); err != nil {
		return err
	}
	// SQL first (the truth), then the index; a failed upsert fails the run, which the next
	// tick repeats (the digest is not "indexed" yet, so it is rebuilt).
	if len(m.Embedding) > 0 {
		if err := sc.d.Vectors.Upsert(ctx, m.EmbedModel, []vector.Point{projection.MemoryPoint(m)}); err != nil {
			return fmt.Errorf("index digest: %w", err)
		}
	}
	sc.built(s.Period)
	sc.afterSave(id)
	sc.log.Info("digest built", "account", o.AccountID, "user", o.UserID, "agent", o.AgentID, "period", s.Period, "bucket", s.Bucket,
		"memories", len(mems), "archives", len(archives), "by", sum.By, "fallback", sum.Fallback)
	return nil
}

// indexed reports whether the digest's point is in the vector index (true without one).
func (sc *Scheduler) indexed(ctx context.Context, o store.DigestOwner, id string) bool {
	if sc.d.Embedder == nil || sc.d.Vectors == nil {
		return true
	}
	_, err := sc.d.Vectors.Get(ctx, o.AccountID, o.UserID, id)
	return err == nil
}
