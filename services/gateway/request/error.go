// Package request decodes and checks the gateway's request bodies. It depends on the contract
// and little else, so the fuzz target over it builds small (a fuzz build instruments every
// package it links).
package request

import "net/http"

// Error codes of the HTTP error body {"error": {"code", "message", "request_id"}} that a
// decoder can answer with.
const (
	CodeBadRequest      = "bad_request"
	CodePayloadTooLarge = "payload_too_large"
)

// Error is an HTTP error a handler answers with.
type Error struct {
	Status  int
	Code    string
	Message string
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// BadRequest is a 400.
func BadRequest(msg string) *Error {
	return &Error{Status: http.StatusBadRequest, Code: CodeBadRequest, Message: msg}
}

// TooLarge is a 413.
func TooLarge(msg string) *Error {
	return &Error{Status: http.StatusRequestEntityTooLarge, Code: CodePayloadTooLarge, Message: msg}
}
