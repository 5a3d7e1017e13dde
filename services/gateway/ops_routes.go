package gateway

import (
	"net/http"
	"time"

	"github.com/membus/membus/pkg/contract"
	"github.com/membus/membus/pkg/store"
	"github.com/membus/membus/services/gateway/request"
)

// RPC ops of the digests and the ops figures.
const (
	opSummary = "summary" // served by the summarizer
	opStats   = "stats"   // served by recall
)

// getSummary answers GET /v1/summaries?period=day|week|month&date=YYYY-MM-DD&agent_id= (RPC
// summary, contract.SummaryRequest): the caller's digest of the period containing date
// (default today, UTC). A missing digest is 404; no summarizer running is 503.
func (s *Service) getSummary(w http.ResponseWriter, r *http.Request, id identity) {
	q := r.URL.Query()
	period := q.Get("period")
	switch period {
	case "day", "week", "month":
	default:
		writeError(w, request.BadRequest("period must be day, week or month"))
		return
	}
	date := q.Get("date")
	if date == "" {
		date = s.deps.Now().UTC().Format(time.DateOnly)
	}
	if _, err := time.Parse(time.DateOnly, date); err != nil {
		writeError(w, request.BadRequest("date must be YYYY-MM-DD"))
		return
	}
	agent := q.Get("agent_id")
	if aerr := checkAgentID(agent); aerr != nil {
		writeError(w, aerr)
		return
	}
	req := contract.SummaryRequest{V: contract.Version, UserID: id.User, AgentID: agent, Period: period, Date: date}
	var resp contract.SummaryResponse
	if aerr := s.call(r.Context(), id, opSummary, s.cfg.RPCTimeout, req, &resp); aerr != nil {
		writeError(w, aerr)
		return
	}
	writeJSON(w, http.StatusOK, resp)
}

// stats answers GET /v1/stats/<kind> (RPC stats): an admin key's account, or every account
// for an operator key. trends takes ?days= (1–366, default 30), agents ?limit= (1–100,
// default 10).
func (s *Service) stats(kind string) func(http.ResponseWriter, *http.Request, identity) {
	return func(w http.ResponseWriter, r *http.Request, id identity) {
		req := contract.StatsRequest{V: contract.Version, Kind: kind, AllAccounts: id.Role == store.RoleOperator}
		var aerr *request.Error
		switch kind {
		case contract.StatsTrends:
			req.Days, aerr = queryInt(r, "days")
			if aerr == nil && req.Days > 366 {
				aerr = request.BadRequest("days must be 1–366")
			}
		case contract.StatsAgents:
			req.Limit, aerr = queryInt(r, "limit")
			if aerr == nil && req.Limit > 100 {
				aerr = request.BadRequest("limit must be 1–100")
			}
		}
		if aerr != nil {
			writeError(w, aerr)
			return
		}
		var resp contract.StatsResponse
		if aerr := s.call(r.Context(), id, opStats, s.cfg.RPCTimeout, req, &resp); aerr != nil {
			writeError(w, aerr)
			return
		}
		writeJSON(w, http.StatusOK, resp)
	}
}
