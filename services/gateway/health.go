package gateway

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/membus/membus/pkg/bus"
)

// readyTimeout bounds all readiness probes together.
const readyTimeout = 2 * time.Second

// healthz answers 200 while the process runs.
func (s *Service) healthz(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

type readyFailure struct {
	Name  string `json:"name"`
	Error string `json:"error"`
}

// readyBody is the /readyz answer; a 503 also carries the usual error object.
type readyBody struct {
	Status string         `json:"status"`
	Failed []readyFailure `json:"failed,omitempty"`
	Error  *errorDetail   `json:"error,omitempty"`
}

// readyz runs the NATS connection check and every Deps.Ready probe concurrently under one
// 2 s deadline: 200 when all pass, else 503 naming the ones that failed.
func (s *Service) readyz(w http.ResponseWriter, r *http.Request) {
	probes := append([]bus.Probe{{Name: "nats", Check: s.natsConnected}}, s.deps.Ready...)
	ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
	defer cancel()
	errs := make([]error, len(probes))
	var wg sync.WaitGroup
	for i, p := range probes {
		wg.Go(func() { errs[i] = runProbe(ctx, p) })
	}
	wg.Wait()
	var failed []readyFailure
	var names []string
	for i, err := range errs {
		if err != nil {
			failed = append(failed, readyFailure{Name: probes[i].Name, Error: err.Error()})
			names = append(names, probes[i].Name)
		}
	}
	if len(failed) == 0 {
		writeJSON(w, http.StatusOK, readyBody{Status: "ok"})
		return
	}
	s.log.Warn("not ready", "failed", strings.Join(names, ","))
	writeJSON(w, http.StatusServiceUnavailable, readyBody{Status: "unavailable", Failed: failed,
		Error: &errorDetail{Code: codeUnavailable, Message: "not ready: " + strings.Join(names, ", "),
			RequestID: w.Header().Get(headerRequestID)}})
}

// runProbe runs one probe and gives up when ctx ends, even if the probe ignores ctx.
func runProbe(ctx context.Context, p bus.Probe) error {
	if p.Check == nil {
		return errors.New("probe has no check")
	}
	done := make(chan error, 1)
	go func() { done <- p.Check(ctx) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return errors.New("timed out after " + readyTimeout.String())
	}
}

func (s *Service) natsConnected(context.Context) error {
	if st := s.deps.NC.Status(); st != nats.CONNECTED {
		return errors.New("nats connection is " + st.String())
	}
	return nil
}
