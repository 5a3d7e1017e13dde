package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"time"
	"unicode/utf8"
)

// headerIdempotencyKey makes a write safe to retry (docs/design.md §11).
const headerIdempotencyKey = "Idempotency-Key"

// maxIdempotencyKeyLen is the schemas' event_id maxLength.
const maxIdempotencyKeyLen = 256

// maxSessionIDLen is the schemas' session_id maxLength.
const maxSessionIDLen = 512

// agentIDPattern is the schemas' agent_id (docs/design.md §3: sanitised to [A-Za-z0-9_-]).
var agentIDPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}$`)

// readBody reads the whole body under Config.MaxBodyBytes: over it is 413.
func (s *Service) readBody(w http.ResponseWriter, r *http.Request) ([]byte, *apiError) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes))
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return nil, tooLarge(fmt.Sprintf("the body is over the %d-byte limit", s.cfg.MaxBodyBytes))
	}
	if err != nil {
		return nil, badRequest("could not read the body: " + err.Error())
	}
	return body, nil
}

// decodeJSON decodes body into v; an empty body is allowed only when optional. Unknown
// fields are ignored, like every membus decoder.
func decodeJSON(body []byte, v any, optional bool) *apiError {
	if len(bytes.TrimSpace(body)) == 0 {
		if optional {
			return nil
		}
		return badRequest("a JSON body is required")
	}
	if !utf8.Valid(body) {
		return badRequest("the body is not valid UTF-8")
	}
	if err := json.Unmarshal(body, v); err != nil {
		return badRequest("invalid JSON body: " + err.Error())
	}
	return nil
}

// sessionID reads and checks the {session_id} path value.
func sessionID(r *http.Request) (string, *apiError) {
	id := r.PathValue("session_id")
	if id == "" || len(id) > maxSessionIDLen || !utf8.ValidString(id) {
		return "", badRequest(fmt.Sprintf("session_id must be 1–%d bytes of UTF-8", maxSessionIDLen))
	}
	return id, nil
}

// idempotencyKey reads the Idempotency-Key header ("" when absent).
func idempotencyKey(r *http.Request) (string, *apiError) {
	key := r.Header.Get(headerIdempotencyKey)
	if len(key) > maxIdempotencyKeyLen || !utf8.ValidString(key) {
		return "", badRequest(fmt.Sprintf("%s must be at most %d bytes of UTF-8", headerIdempotencyKey, maxIdempotencyKeyLen))
	}
	return key, nil
}

// checkAgentID accepts "" (the default) or an id of the schemas' agent_id form.
func checkAgentID(agent string) *apiError {
	if agent != "" && !agentIDPattern.MatchString(agent) {
		return badRequest("agent_id must match [A-Za-z0-9_-]{1,128}")
	}
	return nil
}

// queryInt reads an optional non-negative integer query parameter (0 when absent).
func queryInt(r *http.Request, name string) (int, *apiError) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, badRequest(name + " must be a non-negative integer")
	}
	return n, nil
}

// queryTime reads an optional RFC 3339 time query parameter (nil when absent).
func queryTime(r *http.Request, name string) (*time.Time, *apiError) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return nil, nil
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return nil, badRequest(name + " must be an RFC 3339 time (2026-11-01T00:00:00Z)")
	}
	t = t.UTC()
	return &t, nil
}
