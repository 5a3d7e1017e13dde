package gateway

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/membus/membus/pkg/bus"
	"github.com/membus/membus/pkg/contract"
	"github.com/membus/membus/services/gateway/request"
)

// RPC ops the gateway calls (served by recall and extract on <p>.rpc.<account>.<op>).
const (
	opSessionGet     = "session.get"
	opCommit         = "commit"
	opContext        = "context"
	opRecall         = "recall"
	opMemoriesList   = "memories.list"
	opMemoriesGet    = "memories.get"
	opMemoriesForget = "memories.forget"
)

// commitRPCSlack is added to a synchronous commit's own timeout for the RPC deadline, so the
// commit can answer "timeout" itself before the gateway gives up on it.
const commitRPCSlack = 5 * time.Second

// call runs one RPC for the caller's account: the subject's account is always id.Account.
func (s *Service) call(ctx context.Context, id identity, op string, timeout time.Duration, req, resp any) *request.Error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := bus.Call(ctx, s.deps.NC, s.deps.Names.RPC(id.Account, op), req, resp); err != nil {
		aerr := rpcError(op, err)
		if aerr.Status >= 500 {
			s.log.Warn("rpc failed", "op", op, "account", id.Account, "error", err.Error())
		}
		return aerr
	}
	return nil
}

// getSession answers GET /v1/sessions/{session_id} (RPC session.get).
func (s *Service) getSession(w http.ResponseWriter, r *http.Request, id identity) {
	session, aerr := sessionID(r)
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	var meta contract.SessionMeta
	req := contract.SessionMetaRequest{V: contract.Version, UserID: id.User, SessionID: session}
	if aerr := s.call(r.Context(), id, opSessionGet, s.cfg.RPCTimeout, req, &meta); aerr != nil {
		writeError(w, aerr)
		return
	}
	writeJSON(w, http.StatusOK, meta)
}

// postCommit answers POST /v1/sessions/{session_id}/commit with the CommitResult (RPC commit).
// The request id is derived from the Idempotency-Key (so a retry is the same commit), else
// fresh.
func (s *Service) postCommit(w http.ResponseWriter, r *http.Request, id identity) {
	session, aerr := sessionID(r)
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	idemKey, aerr := idempotencyKey(r)
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	body, aerr := s.readBody(w, r)
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	var in request.Commit
	if aerr := request.DecodeJSON(body, &in, true); aerr != nil {
		writeError(w, aerr)
		return
	}
	if in.AgentID == "" {
		in.AgentID = r.URL.Query().Get("agent_id")
	}
	if aerr := checkAgentID(in.AgentID); aerr != nil {
		writeError(w, aerr)
		return
	}
	if in.KeepRecent != nil && contract.CheckKeepRecent(*in.KeepRecent) != nil {
		writeError(w, request.BadRequest(fmt.Sprintf("keep_recent must be 0–%d", contract.MaxKeepRecent)))
		return
	}
	wait := in.Wait == nil || *in.Wait
	timeout := s.cfg.CommitTimeout
	if in.TimeoutMS != nil {
		if *in.TimeoutMS <= 0 {
			writeError(w, request.BadRequest("timeout_ms must be > 0"))
			return
		}
		timeout = time.Duration(*in.TimeoutMS) * time.Millisecond
	}
	requestID := randomID()
	if idemKey != "" {
		requestID = "http-" + bus.MsgID("http-commit", id.Account, session, idemKey)
	}
	req := contract.CommitRPCRequest{
		V:          contract.Version,
		RequestID:  requestID,
		UserID:     id.User,
		AgentID:    in.AgentID,
		SessionID:  session,
		Kind:       contract.CommitSync,
		Wait:       wait,
		KeepRecent: in.KeepRecent,
		TimeoutMS:  int(timeout / time.Millisecond),
	}
	rpcTimeout := s.cfg.RPCTimeout
	if wait {
		rpcTimeout = timeout + commitRPCSlack
	}
	var res contract.CommitResult
	if aerr := s.call(r.Context(), id, opCommit, rpcTimeout, req, &res); aerr != nil {
		writeError(w, aerr)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

// getContext answers GET /v1/sessions/{session_id}/context?token_budget=N (RPC context).
// token_budget is required: an absent one is 0, which the service answers with 400.
func (s *Service) getContext(w http.ResponseWriter, r *http.Request, id identity) {
	session, aerr := sessionID(r)
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	budget, aerr := queryInt(r, "token_budget")
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	agent := r.URL.Query().Get("agent_id")
	if aerr := checkAgentID(agent); aerr != nil {
		writeError(w, aerr)
		return
	}
	req := contract.ContextRequest{V: contract.Version, UserID: id.User, AgentID: agent, SessionID: session, TokenBudget: budget}
	var resp contract.ContextResponse
	if aerr := s.call(r.Context(), id, opContext, s.cfg.RPCTimeout, req, &resp); aerr != nil {
		writeError(w, aerr)
		return
	}
	writeJSON(w, http.StatusOK, resp)
}

// postRecall answers POST /v1/recall (RPC recall). The user is the caller's, whatever the
// body says.
func (s *Service) postRecall(w http.ResponseWriter, r *http.Request, id identity) {
	body, aerr := s.readBody(w, r)
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	var req contract.RecallRequest
	if aerr := request.DecodeJSON(body, &req, false); aerr != nil {
		writeError(w, aerr)
		return
	}
	if aerr := checkAgentID(req.AgentID); aerr != nil {
		writeError(w, aerr)
		return
	}
	if aerr := s.checkQuery(req.Query); aerr != nil {
		writeError(w, aerr)
		return
	}
	if req.Limit < 0 || req.MaxInjectedChars < 0 || (req.ScoreThreshold != nil && *req.ScoreThreshold < 0) {
		writeError(w, request.BadRequest("limit, max_injected_chars and score_threshold must not be negative"))
		return
	}
	req.V = contract.Version
	req.UserID = id.User
	var resp contract.RecallResponse
	if aerr := s.call(r.Context(), id, opRecall, s.cfg.RPCTimeout, req, &resp); aerr != nil {
		writeError(w, aerr)
		return
	}
	writeJSON(w, http.StatusOK, resp)
}

// maxCursorLen bounds the cursor query parameter (a cursor handed out is about 70 characters).
const maxCursorLen = 256

// listMemories answers GET /v1/memories?scope=&category=&agent_id=&since=&until=&limit=&cursor=
// (RPC memories.list): one page of active memories, newest first (created_at, then id);
// since/until (RFC 3339) bound created_at; next_cursor in the body continues the listing, and
// recall answers a cursor it did not hand out as bad_request (400).
func (s *Service) listMemories(w http.ResponseWriter, r *http.Request, id identity) {
	limit, aerr := queryInt(r, "limit")
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	if limit > 1000 {
		writeError(w, request.BadRequest("limit must be at most 1000"))
		return
	}
	q := r.URL.Query()
	if aerr := checkAgentID(q.Get("agent_id")); aerr != nil {
		writeError(w, aerr)
		return
	}
	switch q.Get("scope") {
	case "", contract.ScopeUser, contract.ScopeAgent:
	default:
		writeError(w, request.BadRequest("scope must be user or agent"))
		return
	}
	if c := q.Get("category"); len(c) > 64 {
		writeError(w, request.BadRequest("category is at most 64 characters"))
		return
	}
	since, aerr := queryTime(r, "since")
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	until, aerr := queryTime(r, "until")
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	cursor := q.Get("cursor")
	if len(cursor) > maxCursorLen {
		writeError(w, request.BadRequest(fmt.Sprintf("cursor is at most %d characters: pass the next_cursor of the previous page unchanged", maxCursorLen)))
		return
	}
	req := contract.MemoriesListRequest{V: contract.Version, UserID: id.User, AgentID: q.Get("agent_id"),
		Scope: q.Get("scope"), Category: q.Get("category"), Limit: limit, Since: since, Until: until, Cursor: cursor}
	var resp contract.MemoriesListResponse
	if aerr := s.call(r.Context(), id, opMemoriesList, s.cfg.RPCTimeout, req, &resp); aerr != nil {
		writeError(w, aerr)
		return
	}
	if resp.Items == nil {
		resp.Items = []contract.RecallItem{}
	}
	writeJSON(w, http.StatusOK, resp)
}

// getMemory answers GET /v1/memories/{id} (RPC memories.get): a missing or foreign id is 404.
func (s *Service) getMemory(w http.ResponseWriter, r *http.Request, id identity) {
	req := contract.MemoryGetRequest{V: contract.Version, UserID: id.User, MemoryID: r.PathValue("id")}
	var item contract.RecallItem
	if aerr := s.call(r.Context(), id, opMemoriesGet, s.cfg.RPCTimeout, req, &item); aerr != nil {
		writeError(w, aerr)
		return
	}
	writeJSON(w, http.StatusOK, item)
}

// forgetMemory answers DELETE /v1/memories/{id} (RPC memories.forget) with 204 No Content; a
// missing or foreign id is 404.
func (s *Service) forgetMemory(w http.ResponseWriter, r *http.Request, id identity) {
	req := contract.MemoryGetRequest{V: contract.Version, UserID: id.User, MemoryID: r.PathValue("id")}
	if aerr := s.call(r.Context(), id, opMemoriesForget, s.cfg.RPCTimeout, req, nil); aerr != nil {
		writeError(w, aerr)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
