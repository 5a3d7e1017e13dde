package gateway

import (
	"net/http"

	"github.com/membus/membus/pkg/contract"
	"github.com/membus/membus/services/gateway/request"
)

// RPC ops of the archive tools (served by recall; docs/design.md §6 "Tools").
const (
	opArchiveSearch = "archive.search"
	opArchiveExpand = "archive.expand"
)

// maxArchiveQueryLen bounds the q parameter of the archive search.
const maxArchiveQueryLen = 4000

// searchArchives answers GET /v1/sessions/{session_id}/archives/search?q=&limit= (RPC
// archive.search): a case-insensitive keyword search over the caller's session's archived
// messages. Another user's session is 404.
func (s *Service) searchArchives(w http.ResponseWriter, r *http.Request, id identity) {
	session, aerr := sessionID(r)
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	q := r.URL.Query().Get("q")
	if q == "" || len(q) > maxArchiveQueryLen {
		writeError(w, request.BadRequest("q must be 1–4000 bytes"))
		return
	}
	limit, aerr := queryInt(r, "limit")
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	if limit > 200 {
		writeError(w, request.BadRequest("limit must be at most 200"))
		return
	}
	req := contract.ArchiveSearchRequest{V: contract.Version, UserID: id.User, SessionID: session, Query: q, Limit: limit}
	var resp contract.ArchiveSearchResponse
	if aerr := s.call(r.Context(), id, opArchiveSearch, s.cfg.RPCTimeout, req, &resp); aerr != nil {
		writeError(w, aerr)
		return
	}
	if resp.Archives == nil {
		resp.Archives = []contract.ArchiveMatch{}
	}
	writeJSON(w, http.StatusOK, resp)
}

// expandArchive answers GET /v1/archives/{archive_id} (RPC archive.expand): one archive of the
// caller with its messages. A missing or foreign id is 404.
func (s *Service) expandArchive(w http.ResponseWriter, r *http.Request, id identity) {
	req := contract.ArchiveExpandRequest{V: contract.Version, UserID: id.User, ArchiveID: r.PathValue("archive_id")}
	var resp contract.ArchiveExpandResponse
	if aerr := s.call(r.Context(), id, opArchiveExpand, s.cfg.RPCTimeout, req, &resp); aerr != nil {
		writeError(w, aerr)
		return
	}
	if resp.Messages == nil {
		resp.Messages = []contract.ArchiveMessage{}
	}
	writeJSON(w, http.StatusOK, resp)
}
