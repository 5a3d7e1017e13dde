package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/nats-io/nats.go"

	"github.com/membus/membus/pkg/bus"
	"github.com/membus/membus/services/gateway/request"
)

// Error codes of the HTTP error body {"error": {"code", "message", "request_id"}}, besides
// the decoders' (request.CodeBadRequest, request.CodePayloadTooLarge).
const (
	codeUnauthorized     = "unauthorized"
	codeForbidden        = "forbidden"
	codeNotFound         = "not_found"
	codeMethodNotAllowed = "method_not_allowed"
	codeUnavailable      = "unavailable"
	codeInternal         = "internal"
)

func unavailable(msg string) *request.Error {
	return &request.Error{Status: http.StatusServiceUnavailable, Code: codeUnavailable, Message: msg}
}

type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Code      string `json:"code"`
	Message   string `json:"message"`
	RequestID string `json:"request_id"`
}

// writeJSON answers status with v as JSON.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// writeError answers with the error body; the request id is the one observe put on the
// response header.
func writeError(w http.ResponseWriter, e *request.Error) {
	writeJSON(w, e.Status, errorBody{Error: errorDetail{Code: e.Code, Message: e.Message,
		RequestID: w.Header().Get(headerRequestID)}})
}

// rpcError maps a bus.Call failure to HTTP: bad_request→400, not_found→404, unavailable
// (no responders, timeouts, a lost connection)→503, anything else→500. Internal details are
// logged by the caller, not sent.
func rpcError(op string, err error) *request.Error {
	var ce *bus.RPCCallError
	if errors.As(err, &ce) {
		switch ce.Code {
		case bus.CodeBadRequest:
			return request.BadRequest(ce.Message)
		case bus.CodeNotFound:
			return &request.Error{Status: http.StatusNotFound, Code: codeNotFound, Message: ce.Message}
		case bus.CodeUnavailable:
			return unavailable(op + " is unavailable: " + ce.Message)
		default:
			return &request.Error{Status: http.StatusInternalServerError, Code: codeInternal, Message: op + " failed"}
		}
	}
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	if errors.As(err, &se) || errors.As(err, &te) {
		return &request.Error{Status: http.StatusInternalServerError, Code: codeInternal, Message: op + " answered an unreadable response"}
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) {
		return unavailable(op + " timed out")
	}
	return unavailable(op + " is unavailable")
}
