package projection

import (
	"context"
	"errors"
	"fmt"

	"github.com/membus/membus/pkg/embed"
	"github.com/membus/membus/pkg/store"
	"github.com/membus/membus/pkg/vector"
)

// Deps are what the projection reads and writes.
type Deps struct {
	Store    *store.Store
	Embedder embed.Embedder
	Vectors  vector.Store
}

// IndexArchive brings the index up to date with one archive whose memories are written
// (state extracted or later): its active memories, one point per archived message
// (embedded now: archived messages keep no embedding in SQL) and one session-context point
// per speaker (ContextPoints) upserted in one write — one
// fsync of a local index's log, one request to Qdrant — and then the memories they
// superseded deleted (write-then-delete: recall filters superseded rows by their SQL state
// meanwhile). Every point id is deterministic, so running it again changes nothing.
func IndexArchive(ctx context.Context, d Deps, a store.Archive) error {
	mems, err := d.Store.ArchiveMemories(ctx, a)
	if err != nil {
		return err
	}
	msgs, err := d.Store.ArchiveMessages(ctx, a)
	if err != nil {
		return fmt.Errorf("archive messages: %w", err)
	}
	mpts := ArchivePoints(a, msgs)
	if err := embedArchivePoints(ctx, d.Embedder, mpts); err != nil {
		return fmt.Errorf("embed archive messages: %w", err)
	}
	pts := make([]vector.Point, 0, len(mems)+len(mpts))
	ids := make([]string, 0, len(mems))
	for _, m := range mems {
		if len(m.Embedding) == 0 || (m.EmbedModel != "" && m.EmbedModel != d.Embedder.Model()) {
			continue
		}
		pts = append(pts, MemoryPoint(m))
		ids = append(ids, m.ID)
	}
	pts = append(pts, mpts...)
	pts = append(pts, ContextPoints(mpts)...)
	if len(pts) > 0 {
		if err := d.Vectors.Upsert(ctx, d.Embedder.Model(), pts); err != nil {
			return fmt.Errorf("upsert vectors: %w", err)
		}
	}
	old, err := d.Store.SupersededBy(ctx, a.AccountID, ids)
	if err != nil {
		return err
	}
	if len(old) == 0 {
		return nil
	}
	oldIDs := make([]string, 0, len(old))
	for _, m := range old {
		oldIDs = append(oldIDs, m.ID)
	}
	if err := d.Vectors.Delete(ctx, a.AccountID, a.UserID, oldIDs); err != nil {
		return fmt.Errorf("delete superseded vectors: %w", err)
	}
	return nil
}

// IndexMemory makes the index agree with one memory row: upserted while it is active and has
// an embedding of the index's model, deleted otherwise (superseded, merged, forgotten, erased).
func IndexMemory(ctx context.Context, d Deps, account, user, id string) error {
	m, err := d.Store.GetMemory(ctx, account, user, id)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return err
	}
	if errors.Is(err, store.ErrNotFound) || !m.Active() || len(m.Embedding) == 0 || (m.EmbedModel != "" && m.EmbedModel != d.Embedder.Model()) {
		return d.Vectors.Delete(ctx, account, user, []string{id})
	}
	return d.Vectors.Upsert(ctx, d.Embedder.Model(), []vector.Point{MemoryPoint(m)})
}

// embedArchivePoints embeds archive points from their own text, then gives each the previous
// turn in its keyword text (withPreviousTurn).
func embedArchivePoints(ctx context.Context, e embed.Embedder, pts []vector.Point) error {
	if err := embedPoints(ctx, e, pts); err != nil {
		return err
	}
	withPreviousTurn(pts)
	return nil
}

// embedPoints fills the vectors of pts from their texts, in batches.
func embedPoints(ctx context.Context, e embed.Embedder, pts []vector.Point) error {
	const batch = 256
	for i := 0; i < len(pts); i += batch {
		part := pts[i:min(i+batch, len(pts))]
		texts := make([]string, len(part))
		for j, p := range part {
			texts[j] = p.Text
		}
		vecs, err := e.Embed(ctx, texts)
		if err != nil {
			return err
		}
		for j := range part {
			part[j].Vector = vecs[j]
		}
	}
	return nil
}
