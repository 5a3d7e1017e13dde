package gateway

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/membus/membus/pkg/bus"
	"github.com/membus/membus/pkg/contract"
	"github.com/membus/membus/services/gateway/request"
)

// forgetMinScore is the score a single candidate needs for forget-by-query to delete it
// (docs/design.md §6 "Tools": memory_forget).
const forgetMinScore = 0.85

// forgetCandidates is how many memories forget-by-query looks at.
const forgetCandidates = 5

// maxStoreTextChars bounds the text of POST /v1/memories (the plugin's memory_store limit).
const maxStoreTextChars = 8000

// storeSessionPrefix names the side session a stored memory is written to, one per user and
// agent, so the conversation's own archive stays untouched: a session is one user's, so the
// user's hash is part of the id (the plugin's memory_store computes the same id).
const storeSessionPrefix = "membus-store-"

// storeSession is membus-store-<agent>-<16 hex of the user>, at most 64 characters.
func storeSession(user, agent string) string {
	const room = 64 - len(storeSessionPrefix) - 17
	if len(agent) > room {
		agent = agent[:room]
	}
	return storeSessionPrefix + agent + "-" + bus.MsgID("store-session", user)[:16]
}

// storeResponse answers POST /v1/memories: the commit that extracted the text.
type storeResponse struct {
	SessionID string                `json:"session_id"`
	MessageID string                `json:"message_id"`
	Result    contract.CommitResult `json:"result"`
}

// storeMemory answers POST /v1/memories (docs/design.md §6 memory_store: write + synchronous commit):
// the text is published as a user message to the side session storeSession(user, agent), then a
// commit of kind store (keep_recent 0) waits until it is archived, extracted and indexed.
// The message and commit ids derive from the Idempotency-Key (else the text and the time), so
// a retry stores nothing twice.
func (s *Service) storeMemory(w http.ResponseWriter, r *http.Request, id identity) {
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
	var in request.Store
	if aerr := request.DecodeJSON(body, &in, false); aerr != nil {
		writeError(w, aerr)
		return
	}
	text := strings.TrimSpace(in.Text)
	switch {
	case text == "":
		writeError(w, request.BadRequest("text is required"))
		return
	case utf8.RuneCountInString(text) > maxStoreTextChars:
		writeError(w, request.TooLarge(fmt.Sprintf("text is over %d characters", maxStoreTextChars)))
		return
	}
	agent := in.AgentID
	if agent == "" {
		agent = defaultAgentID
	}
	if aerr := checkAgentID(agent); aerr != nil {
		writeError(w, aerr)
		return
	}
	timeout := s.cfg.CommitTimeout
	if in.TimeoutMS != nil {
		if *in.TimeoutMS <= 0 {
			writeError(w, request.BadRequest("timeout_ms must be > 0"))
			return
		}
		timeout = time.Duration(*in.TimeoutMS) * time.Millisecond
	}
	session := storeSession(id.User, agent)
	now := s.deps.Now().UTC()
	seed := "text\x1f" + text + "\x1f" + now.Format(time.RFC3339Nano)
	if idemKey != "" {
		seed = "key\x1f" + idemKey
	}
	msgID := "store-" + bus.MsgID("http-store", id.Account, id.User, session, seed)[:32]
	ev := &contract.TurnEvent{
		V: contract.Version, EventID: "http-" + bus.MsgID("http-store-event", id.Account, session, msgID),
		AccountID: id.Account, UserID: id.User, AgentID: agent, SessionID: session, Source: sourceHTTP,
		Messages: []contract.Message{{MessageID: msgID, Role: contract.RoleUser,
			Parts: []contract.Part{{Type: contract.PartText, Text: text}}, CreatedAt: now}},
		SentAt: now,
	}
	if err := ev.Validate(); err != nil {
		writeError(w, request.BadRequest(err.Error()))
		return
	}
	pctx, cancel := context.WithTimeout(r.Context(), s.cfg.RPCTimeout)
	_, err := bus.PublishJSON(pctx, s.deps.JS, s.deps.Names.Turns(id.Account, session), ev.EventID, ev)
	cancel()
	if err != nil {
		s.log.Warn("publish stored memory failed", "account", id.Account, "error", err.Error())
		writeError(w, unavailable("the memory could not be stored in JetStream; retry with the same Idempotency-Key"))
		return
	}
	keep := 0
	req := contract.CommitRPCRequest{
		V: contract.Version, RequestID: "store-" + bus.MsgID("http-store-commit", id.Account, msgID)[:40],
		UserID: id.User, AgentID: agent, SessionID: session, Kind: contract.CommitStore, Wait: true,
		KeepRecent: &keep, TimeoutMS: int(timeout / time.Millisecond),
	}
	var res contract.CommitResult
	if aerr := s.call(r.Context(), id, opCommit, timeout+commitRPCSlack, req, &res); aerr != nil {
		writeError(w, aerr)
		return
	}
	writeJSON(w, http.StatusOK, storeResponse{SessionID: session, MessageID: msgID, Result: res})
}

// forgetResponse answers forget-by-query: the deleted memory, or the candidates when not
// exactly one scored ≥ 0.85.
type forgetResponse struct {
	Deleted    []contract.RecallItem `json:"deleted"`
	Candidates []contract.RecallItem `json:"candidates"`
}

// forgetByQuery answers POST /v1/memories/forget (docs/design.md §6 memory_forget by query): recall with
// the query (memories only, no threshold); delete only when exactly one candidate scores
// ≥ 0.85, else answer the candidates and delete nothing.
func (s *Service) forgetByQuery(w http.ResponseWriter, r *http.Request, id identity) {
	body, aerr := s.readBody(w, r)
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	var in request.Forget
	if aerr := request.DecodeJSON(body, &in, false); aerr != nil {
		writeError(w, aerr)
		return
	}
	in.Query = strings.TrimSpace(in.Query)
	if in.Query == "" {
		writeError(w, request.BadRequest("query is required"))
		return
	}
	if aerr := s.checkQuery(in.Query); aerr != nil {
		writeError(w, aerr)
		return
	}
	if aerr := checkAgentID(in.AgentID); aerr != nil {
		writeError(w, aerr)
		return
	}
	zero := 0.0
	req := contract.RecallRequest{V: contract.Version, UserID: id.User, AgentID: in.AgentID, Query: in.Query,
		Limit: forgetCandidates, ScoreThreshold: &zero, Scopes: []string{contract.ScopeUser, contract.ScopeAgent}}
	var rec contract.RecallResponse
	if aerr := s.call(r.Context(), id, opRecall, s.cfg.RPCTimeout, req, &rec); aerr != nil {
		writeError(w, aerr)
		return
	}
	out := forgetResponse{Deleted: []contract.RecallItem{}, Candidates: []contract.RecallItem{}}
	var strong []contract.RecallItem
	for _, it := range rec.Items {
		if it.Kind != contract.KindMemory {
			continue
		}
		out.Candidates = append(out.Candidates, it)
		if it.Score >= forgetMinScore {
			strong = append(strong, it)
		}
	}
	if len(strong) != 1 {
		writeJSON(w, http.StatusOK, out)
		return
	}
	del := contract.MemoryGetRequest{V: contract.Version, UserID: id.User, MemoryID: strong[0].ID}
	var gone contract.MemoriesListResponse
	if aerr := s.call(r.Context(), id, opMemoriesForget, s.cfg.RPCTimeout, del, &gone); aerr != nil {
		writeError(w, aerr)
		return
	}
	out.Deleted = append(out.Deleted, strong[0])
	out.Candidates = []contract.RecallItem{}
	writeJSON(w, http.StatusOK, out)
}

// checkQuery applies Config.MaxQueryChars: an over-long query is 413 (a limit, like the body
// size), counted in characters.
func (s *Service) checkQuery(q string) *request.Error {
	if n := utf8.RuneCountInString(q); n > s.cfg.MaxQueryChars {
		return request.TooLarge(fmt.Sprintf("query is %d characters, over the limit of %d", n, s.cfg.MaxQueryChars))
	}
	return nil
}
