package gateway

import (
	"net/http"
	"strings"
	"time"

	"github.com/membus/membus/pkg/contract"
	"github.com/membus/membus/services/gateway/request"
)

// opErase is the erasure RPC (served by recall, which holds the stores).
const opErase = "erase"

// eraseTimeout bounds one erasure RPC (a user with many sessions takes a while).
const eraseTimeout = 120 * time.Second

// deleteSession answers DELETE /v1/sessions/{session_id} (docs/design.md §5 "Erasure"): the session's
// messages, archives, its sources in memories (a memory with none left goes), vectors, cache,
// digests and JetStream/DLQ copies, after a tombstone. Another user's session is 404.
func (s *Service) deleteSession(w http.ResponseWriter, r *http.Request, id identity) {
	session, aerr := sessionID(r)
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	s.erase(w, r, id, contract.EraseRequest{V: contract.Version, UserID: id.User, SessionID: session})
}

// deleteUser answers DELETE /v1/users/{user_id} (admin keys only): everything of the user in
// the admin's account.
func (s *Service) deleteUser(w http.ResponseWriter, r *http.Request, id identity) {
	user := strings.TrimSpace(r.PathValue("user_id"))
	if user == "" {
		writeError(w, request.BadRequest("user_id is required"))
		return
	}
	if aerr := validUserID(user); aerr != nil {
		writeError(w, aerr)
		return
	}
	s.erase(w, r, id, contract.EraseRequest{V: contract.Version, UserID: user})
}

func (s *Service) erase(w http.ResponseWriter, r *http.Request, id identity, req contract.EraseRequest) {
	var res contract.EraseResult
	if aerr := s.call(r.Context(), id, opErase, eraseTimeout, req, &res); aerr != nil {
		writeError(w, aerr)
		return
	}
	writeJSON(w, http.StatusOK, res)
}
