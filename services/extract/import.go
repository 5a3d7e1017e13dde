package extract

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go/micro"

	"github.com/membus/membus/pkg/bus"
	"github.com/membus/membus/pkg/contract"
	"github.com/membus/membus/pkg/lock"
	"github.com/membus/membus/pkg/memory"
	"github.com/membus/membus/pkg/projection"
	"github.com/membus/membus/pkg/store"
	"github.com/membus/membus/pkg/vector"
)

// importTimeout bounds one memories.import request (embedding a batch, one transaction, the
// vector writes).
const importTimeout = time.Minute

// handleImportRPC serves <p>.rpc.<account>.memories.import (`membus import`). Extract serves it
// because extract is the one writer of memories: it holds the embedder and the vector store,
// and takes the user's merge lock, so an import and a commit never judge duplicates against
// each other's half-written rows.
func (s *Service) handleImportRPC(ctx context.Context, account string, req micro.Request) {
	var r contract.MemoriesImportRequest
	if err := json.Unmarshal(req.Data(), &r); err != nil {
		_ = bus.RespondError(req, bus.CodeBadRequest, fmt.Errorf("decode import request: %w", err))
		return
	}
	ctx, cancel := context.WithTimeout(ctx, importTimeout)
	defer cancel()
	res, err := s.Import(ctx, account, r)
	switch {
	case errors.Is(err, contract.ErrInvalid):
		_ = bus.RespondError(req, bus.CodeBadRequest, err)
	case errors.Is(err, store.ErrTombstoned):
		_ = bus.RespondError(req, bus.CodeBadRequest, fmt.Errorf("user %s was erased: nothing is imported for it", r.UserID))
	case errors.Is(err, lock.ErrBusy):
		_ = bus.RespondError(req, bus.CodeUnavailable, err)
	case err != nil:
		s.log.Warn("memories.import failed", "account", account, "err", err)
		_ = bus.RespondError(req, bus.CodeInternal, err)
	default:
		_ = bus.RespondJSON(req, res)
	}
}

// Import restores exported memories into the account's user r.UserID. The rows are written
// the way a commit writes them — SQL first with a memory_upserted event per new or changed row
// in the same transaction (outbox), then the vector index — so recall, the replicas' local
// indexes and the event consumers all see them. Restored, not re-extracted: text, category,
// slot, sources and times are kept as exported. Idempotent (store.ImportMemories): a record
// the user holds already changes nothing, and every record's row is indexed again, so a retry
// after a failed vector write repairs the index.
func (s *Service) Import(ctx context.Context, account string, r contract.MemoriesImportRequest) (contract.MemoriesImportResponse, error) {
	resp := contract.MemoriesImportResponse{V: contract.Version, IDs: []string{}}
	mems, err := s.importRows(account, r)
	if err != nil {
		return resp, err
	}
	texts := make([]string, len(mems))
	for i, m := range mems {
		texts[i] = m.Text
	}
	vecs, err := s.d.Embedder.Embed(ctx, texts)
	if err != nil {
		return resp, fmt.Errorf("embed: %w", err)
	}
	for i := range mems {
		mems[i].Embedding, mems[i].EmbedModel = vecs[i], s.d.Embedder.Model()
	}

	merge, err := s.d.Locker.Acquire(ctx, lock.MergeKey(account, r.UserID), lock.MergeTTL)
	if err != nil {
		return resp, err
	}
	defer lock.Release(context.WithoutCancel(ctx), merge, s.log)
	results, err := s.d.Store.ImportMemories(ctx, account, r.UserID, mems, func(m store.Memory) store.OutboxEntry {
		srcs, _ := json.Marshal(m.Sources)
		return s.event(contract.Event{
			EventID: eventID(contract.EventMemoryUpserted, m.ID, "import", string(srcs)), Kind: contract.EventMemoryUpserted,
			AccountID: account, UserID: r.UserID, AgentID: m.AgentID, MemoryID: m.ID, Category: m.Category,
		})
	})
	if err != nil {
		return resp, err
	}
	s.d.KickOutbox()
	var ids []string
	for _, res := range results {
		resp.IDs = append(resp.IDs, res.ID)
		switch res.Outcome {
		case store.ImportCreated:
			resp.Created++
		case store.ImportMerged:
			resp.Merged++
		case store.ImportUnchanged:
			resp.Unchanged++
		case store.ImportErased:
			resp.Erased++
			continue
		}
		ids = append(ids, res.ID)
	}
	s.memoriesWritten(float64(resp.Created + resp.Merged))
	if err := s.indexImported(ctx, account, r.UserID, ids); err != nil {
		return resp, err
	}
	s.log.Info("memories imported", "account", account, "user", r.UserID, "created", resp.Created, "merged", resp.Merged,
		"unchanged", resp.Unchanged, "erased", resp.Erased)
	return resp, nil
}

// importRows checks a request and turns its records into rows of the account's user. A record
// exported from this very owner keeps its id; one from another account or user gets
// memory.ImportID, so it never meets the exporter's row (ids are global keys).
func (s *Service) importRows(account string, r contract.MemoriesImportRequest) ([]store.Memory, error) {
	switch {
	case r.UserID == "":
		return nil, fmt.Errorf("%w: user_id is required", contract.ErrInvalid)
	case len(r.Memories) == 0 || len(r.Memories) > contract.MaxImportBatch:
		return nil, fmt.Errorf("%w: memories must hold 1–%d records", contract.ErrInvalid, contract.MaxImportBatch)
	}
	mems := make([]store.Memory, 0, len(r.Memories))
	for i, rec := range r.Memories {
		if err := rec.Validate(); err != nil {
			return nil, fmt.Errorf("memories[%d] (%s): %w", i, rec.ID, err)
		}
		if rec.Category == memory.Digest || !slices.Contains(memory.Categories, rec.Category) {
			return nil, fmt.Errorf("%w: memories[%d] (%s): category %q is not a memory category", contract.ErrInvalid, i, rec.ID, rec.Category)
		}
		id := rec.ID
		if rec.AccountID != account || rec.UserID != r.UserID {
			id = memory.ImportID(account, r.UserID, rec.ID)
		}
		m := store.Memory{
			ID: id, AccountID: account, UserID: r.UserID, Scope: rec.Scope, Category: rec.Category,
			Subject: rec.Subject, Attribute: rec.Attribute, Polarity: rec.Polarity, Value: rec.Value, Abstract: rec.Abstract,
			Text: rec.Text, Importance: rec.Importance, EventTime: rec.EventTime, ValidFrom: rec.ValidFrom, CreatedAt: rec.CreatedAt,
			ContentHash: memory.ContentHash(rec.Text),
		}
		if m.Abstract == "" {
			m.Abstract = memory.Abstract(rec.Text)
		}
		if rec.Scope == contract.ScopeAgent {
			m.AgentID = rec.AgentID
		}
		for _, src := range rec.Sources {
			m.Sources = append(m.Sources, store.Source{SessionID: src.SessionID, MessageID: src.MessageID})
		}
		mems = append(mems, m)
	}
	return mems, nil
}

// indexImported makes the vector index agree with the imported rows (projection.IndexMemory's
// rule, in one write): active rows with an embedding of the index's model are upserted.
func (s *Service) indexImported(ctx context.Context, account, user string, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	ms, err := s.d.Store.MemoriesByID(ctx, account, user, ids)
	if err != nil {
		return err
	}
	var pts []vector.Point
	for _, m := range ms {
		if m.Active() && len(m.Embedding) > 0 && (m.EmbedModel == "" || m.EmbedModel == s.d.Embedder.Model()) {
			pts = append(pts, projection.MemoryPoint(m))
		}
	}
	if len(pts) == 0 {
		return nil
	}
	if err := s.d.Vectors.Upsert(ctx, s.d.Embedder.Model(), pts); err != nil {
		return fmt.Errorf("upsert imported vectors: %w", err)
	}
	return nil
}
