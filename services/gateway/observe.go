package gateway

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/membus/membus/services/gateway/request"
)

// headerRequestID carries the request id: echoed when the caller sent a sane one, else
// generated; present on every response.
const headerRequestID = "X-Request-Id"

// observe wraps the router: request id, panic recovery, JSON bodies for unmatched routes,
// one log line and the metrics of every request. Bodies are never logged.
func (s *Service) observe(mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rid := r.Header.Get(headerRequestID)
		if !saneRequestID(rid) {
			rid = randomID()
		}
		w.Header().Set(headerRequestID, rid)
		sw := &statusWriter{ResponseWriter: w}
		route := s.serve(sw, r, mux)
		status := sw.status
		if status == 0 {
			status = http.StatusOK
		}
		elapsed := time.Since(start)
		s.requests.WithLabelValues(route, strconv.Itoa(status)).Inc()
		s.latency.WithLabelValues(route, strconv.Itoa(status)).Observe(elapsed.Seconds())
		level := slog.LevelInfo
		if status >= 500 {
			level = slog.LevelWarn
		}
		s.log.Log(r.Context(), level, "http request", "method", r.Method, "route", route,
			"status", status, "duration_ms", float64(elapsed.Microseconds())/1000, "request_id", rid)
	})
}

// serve runs the matched handler (recovering a panic into a 500) and returns the route
// pattern for logs and metrics; unmatched requests get a JSON 404/405 and the route
// "unmatched", so label values stay bounded.
func (s *Service) serve(w *statusWriter, r *http.Request, mux *http.ServeMux) (route string) {
	h, pattern := mux.Handler(r)
	if pattern == "" {
		probe := &statusWriter{ResponseWriter: discardWriter{header: http.Header{}}}
		h.ServeHTTP(probe, r)
		switch probe.status {
		case http.StatusNotFound:
			writeError(w, &request.Error{Status: http.StatusNotFound, Code: codeNotFound, Message: "no route " + r.Method + " " + r.URL.Path})
			return "unmatched"
		case http.StatusMethodNotAllowed:
			w.Header().Set("Allow", probe.Header().Get("Allow"))
			writeError(w, &request.Error{Status: http.StatusMethodNotAllowed, Code: codeMethodNotAllowed,
				Message: r.Method + " is not allowed on " + r.URL.Path})
			return "unmatched"
		}
		// A redirect (cleaned path) or the like: let the mux answer it.
	}
	defer func() {
		if v := recover(); v != nil {
			if err, ok := v.(error); ok && errors.Is(err, http.ErrAbortHandler) {
				panic(v)
			}
			s.log.Error("handler panic", "route", pattern, "panic", fmt.Sprint(v),
				"request_id", w.Header().Get(headerRequestID))
			if w.status == 0 {
				writeError(w, &request.Error{Status: http.StatusInternalServerError, Code: codeInternal, Message: "internal error"})
			}
			route = pattern
		}
	}()
	mux.ServeHTTP(w, r)
	if pattern == "" {
		return "unmatched"
	}
	return pattern
}

// saneRequestID accepts a caller's request id of 1–128 characters of [A-Za-z0-9._:-].
func saneRequestID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			c == '.' || c == '_' || c == ':' || c == '-'
		if !ok {
			return false
		}
	}
	return true
}

// randomID is 16 random bytes in hex (request ids, commit request ids).
func randomID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b)
}

// statusWriter records the status a handler wrote.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the real writer (Flush, deadlines).
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// discardWriter keeps headers and drops the body (used to learn what the mux would answer
// for an unmatched request).
type discardWriter struct{ header http.Header }

func (d discardWriter) Header() http.Header         { return d.header }
func (d discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (d discardWriter) WriteHeader(int)             {}
