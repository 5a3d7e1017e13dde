package recall

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/membus/membus/pkg/bus"
	"github.com/membus/membus/pkg/contract"
	"github.com/membus/membus/pkg/store"
)

func item(m store.Memory) contract.RecallItem {
	kind := contract.KindMemory
	if m.Category == "digest" {
		kind = contract.KindDigest
	}
	return contract.RecallItem{
		ID: m.ID, Kind: kind, Scope: m.Scope, Category: m.Category, Text: m.Text,
		Sources: m.SourceIDs(), CreatedAt: m.CreatedAt, EventTime: m.EventTime,
	}
}

// maxListLimit is the largest page of memories.list and memories.export; defaultListLimit the
// page when the request names none (or one out of range).
const (
	maxListLimit     = 1000
	defaultListLimit = 100
)

// listPage reads one page of the user's active memories for memories.list and
// memories.export: a bad cursor is the caller's mistake (bad_request), never a failure.
func (s *Service) listPage(ctx context.Context, account string, req contract.MemoriesListRequest, noDigests bool) ([]store.Memory, string, error) {
	if req.UserID == "" {
		return nil, "", fmt.Errorf("%w: user_id is required", errBadRequest)
	}
	limit := req.Limit
	if limit <= 0 || limit > maxListLimit {
		limit = defaultListLimit
	}
	ms, next, err := s.d.Store.MemoriesPage(ctx, store.MemoryFilter{AccountID: account, UserID: req.UserID, AgentID: req.AgentID,
		Scope: req.Scope, Category: req.Category, NoDigests: noDigests, ActiveOnly: true, Limit: limit, Since: req.Since, Until: req.Until}, req.Cursor)
	if errors.Is(err, store.ErrBadCursor) {
		return nil, "", fmt.Errorf("%w: %w", errBadRequest, err)
	}
	return ms, next, err
}

// ListMemories lists one page of a user's active memories, newest first (created_at, then
// id); NextCursor continues it.
func (s *Service) ListMemories(ctx context.Context, account string, req contract.MemoriesListRequest) (contract.MemoriesListResponse, error) {
	resp := contract.MemoriesListResponse{V: contract.Version, Items: []contract.RecallItem{}}
	ms, next, err := s.listPage(ctx, account, req, false)
	if err != nil {
		return resp, err
	}
	for _, m := range ms {
		resp.Items = append(resp.Items, item(m))
	}
	resp.NextCursor = next
	return resp, nil
}

// ExportMemories answers memories.export: ListMemories' page as full records (every field
// `membus import` needs to restore a memory), digests left out: the summarizer derives them.
func (s *Service) ExportMemories(ctx context.Context, account string, req contract.MemoriesListRequest) (contract.MemoriesExportResponse, error) {
	resp := contract.MemoriesExportResponse{V: contract.Version, Items: []contract.MemoryRecord{}}
	ms, next, err := s.listPage(ctx, account, req, true)
	if err != nil {
		return resp, err
	}
	for _, m := range ms {
		resp.Items = append(resp.Items, record(m))
	}
	resp.NextCursor = next
	return resp, nil
}

// record is a memory row as an export record.
func record(m store.Memory) contract.MemoryRecord {
	srcs := make([]contract.MemorySource, 0, len(m.Sources))
	for _, src := range m.Sources {
		srcs = append(srcs, contract.MemorySource{SessionID: src.SessionID, MessageID: src.MessageID})
	}
	r := contract.MemoryRecord{
		V: contract.Version, ID: m.ID, AccountID: m.AccountID, UserID: m.UserID, AgentID: m.AgentID, Scope: m.Scope,
		Category: m.Category, Subject: m.Subject, Attribute: m.Attribute, Polarity: m.Polarity, Value: m.Value,
		Abstract: m.Abstract, Text: m.Text, Importance: m.Importance, Sources: srcs, EventTime: m.EventTime,
		ValidFrom: m.ValidFrom, CreatedAt: m.CreatedAt, UpdatedAt: m.UpdatedAt,
	}
	if r.Scope != contract.ScopeAgent {
		r.AgentID = "" // a user-scoped memory belongs to no agent (the row may name the one that heard it)
	}
	return r
}

// GetMemory returns one memory of the user; a foreign id is not found.
func (s *Service) GetMemory(ctx context.Context, account string, req contract.MemoryGetRequest) (contract.RecallItem, error) {
	m, err := s.d.Store.GetMemory(ctx, account, req.UserID, req.MemoryID)
	if err != nil {
		return contract.RecallItem{}, err
	}
	return item(m), nil
}

// ForgetMemory deletes one memory of the user (SQL first, with its memory_deleted event; then
// the index).
func (s *Service) ForgetMemory(ctx context.Context, account string, req contract.MemoryGetRequest) (contract.MemoriesListResponse, error) {
	m, err := s.d.Store.GetMemory(ctx, account, req.UserID, req.MemoryID)
	if err != nil {
		return contract.MemoriesListResponse{}, err
	}
	ev := contract.Event{V: contract.Version, EventID: "evt-memory_deleted-" + bus.MsgID(m.ID)[:32], Kind: contract.EventMemoryDeleted,
		AccountID: account, UserID: m.UserID, AgentID: m.AgentID, SessionID: "", MemoryID: m.ID, Category: m.Category, At: s.d.Now().UTC()}
	b, _ := json.Marshal(ev)
	entry := store.OutboxEntry{ID: ev.EventID, Subject: s.d.Names.Event(ev.Kind, account, "_"), Payload: b}
	if err := s.d.Store.DeleteMemory(ctx, account, req.UserID, m.ID, []store.OutboxEntry{entry}); err != nil {
		return contract.MemoriesListResponse{}, err
	}
	s.d.KickOutbox()
	if err := s.d.Vectors.Delete(ctx, account, req.UserID, []string{m.ID}); err != nil {
		s.log.Warn("forget: vector delete failed; the row is gone from SQL so recall filters it out", "id", m.ID, "err", err)
	}
	return contract.MemoriesListResponse{V: contract.Version, Items: []contract.RecallItem{item(m)}}, nil
}

// SessionMeta answers GET /v1/sessions/{id}.
func (s *Service) SessionMeta(ctx context.Context, account string, req contract.SessionMetaRequest) (contract.SessionMeta, error) {
	if req.SessionID == "" || req.UserID == "" {
		return contract.SessionMeta{}, fmt.Errorf("%w: session_id and user_id are required", errBadRequest)
	}
	sess, err := s.d.Store.GetSession(ctx, account, req.SessionID)
	if err != nil {
		return contract.SessionMeta{}, err
	}
	if sess.UserID != req.UserID {
		return contract.SessionMeta{}, store.ErrNotFound
	}
	keep := s.cfg.KeepRecent
	if sess.KeepRecent != nil {
		keep = *sess.KeepRecent
	}
	pending, err := s.d.Store.PendingTokens(ctx, account, req.SessionID, keep)
	if err != nil {
		return contract.SessionMeta{}, err
	}
	counts, err := s.d.Store.SessionMemoryCounts(ctx, account, req.SessionID)
	if err != nil {
		return contract.SessionMeta{}, err
	}
	return contract.SessionMeta{V: contract.Version, SessionID: sess.SessionID, MessageCount: int(sess.MessageCount),
		PendingTokens: int(pending), CommitCount: int(sess.CommitCount), Memories: counts}, nil
}
