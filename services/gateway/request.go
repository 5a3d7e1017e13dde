package gateway

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/membus/membus/services/gateway/request"
)

// headerIdempotencyKey makes a write safe to retry (docs/design.md §11).
const headerIdempotencyKey = "Idempotency-Key"

// maxSessionIDLen is the schemas' session_id maxLength.
const maxSessionIDLen = 512

// agentIDPattern is the schemas' agent_id (docs/design.md §3: sanitised to [A-Za-z0-9_-]).
var agentIDPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}$`)

// readBody reads the whole body under Config.MaxBodyBytes: over it is 413.
func (s *Service) readBody(w http.ResponseWriter, r *http.Request) ([]byte, *request.Error) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes))
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return nil, request.TooLarge(fmt.Sprintf("the body is over the %d-byte limit", s.cfg.MaxBodyBytes))
	}
	if err != nil {
		return nil, request.BadRequest("could not read the body: " + err.Error())
	}
	return body, nil
}

// sessionID reads and checks the {session_id} path value.
func sessionID(r *http.Request) (string, *request.Error) {
	id := r.PathValue("session_id")
	if id == "" || len(id) > maxSessionIDLen || !utf8.ValidString(id) {
		return "", request.BadRequest(fmt.Sprintf("session_id must be 1–%d bytes of UTF-8", maxSessionIDLen))
	}
	return id, nil
}

// idempotencyKey reads the Idempotency-Key header ("" when absent).
func idempotencyKey(r *http.Request) (string, *request.Error) {
	key := r.Header.Get(headerIdempotencyKey)
	if len(key) > request.MaxIdempotencyKeyLen || !utf8.ValidString(key) {
		return "", request.BadRequest(fmt.Sprintf("%s must be at most %d bytes of UTF-8", headerIdempotencyKey, request.MaxIdempotencyKeyLen))
	}
	return key, nil
}

// checkAgentID accepts "" (the default) or an id of the schemas' agent_id form.
func checkAgentID(agent string) *request.Error {
	if agent != "" && !agentIDPattern.MatchString(agent) {
		return request.BadRequest("agent_id must match [A-Za-z0-9_-]{1,128}")
	}
	return nil
}

// queryInt reads an optional non-negative integer query parameter (0 when absent).
func queryInt(r *http.Request, name string) (int, *request.Error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, request.BadRequest(name + " must be a non-negative integer")
	}
	return n, nil
}

// queryTime reads an optional RFC 3339 time query parameter (nil when absent).
func queryTime(r *http.Request, name string) (*time.Time, *request.Error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return nil, nil
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return nil, request.BadRequest(name + " must be an RFC 3339 time (2026-11-01T00:00:00Z)")
	}
	t = t.UTC()
	return &t, nil
}
