package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/membus/membus/pkg/bus"
)

func TestReadyz(t *testing.T) {
	ok := bus.Probe{Name: "sql", Check: func(context.Context) error { return nil }}
	down := bus.Probe{Name: "redis", Check: func(context.Context) error { return errors.New("connection refused") }}
	hangs := bus.Probe{Name: "qdrant", Check: func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }}
	tests := []struct {
		name       string
		probes     []bus.Probe
		wantStatus int
		wantFailed []string
	}{
		{"all probes pass", []bus.Probe{ok}, 200, nil},
		{"a failing probe is 503 and named", []bus.Probe{ok, down}, 503, []string{"redis"}},
		{"a hanging probe times out and is named", []bus.Probe{hangs, ok}, 503, []string{"qdrant"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, func(s *setup) { s.deps.Ready = tc.probes })
			rec := e.do("GET", "/readyz", nil, nil)
			if rec.Code != tc.wantStatus {
				t.Fatalf("status %d, want %d: %s", rec.Code, tc.wantStatus, rec.Body.String())
			}
			var body struct {
				Status string `json:"status"`
				Failed []struct {
					Name  string `json:"name"`
					Error string `json:"error"`
				} `json:"failed"`
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, f := range body.Failed {
				names = append(names, f.Name)
				if f.Error == "" {
					t.Errorf("failure of %s without a reason", f.Name)
				}
			}
			if len(names) != len(tc.wantFailed) || (len(names) > 0 && names[0] != tc.wantFailed[0]) {
				t.Fatalf("failed %v, want %v", names, tc.wantFailed)
			}
			if tc.wantStatus == 503 {
				if code, _ := errorBody(t, rec); code != "unavailable" {
					t.Fatalf("code %q", code)
				}
			}
		})
	}
}

func TestReadyzFailsWhenNATSIsGone(t *testing.T) {
	e := newEnv(t)
	e.nc.Close()
	rec := e.do("GET", "/readyz", nil, nil)
	if rec.Code != 503 || !json.Valid(rec.Body.Bytes()) {
		t.Fatalf("status %d: %s", rec.Code, rec.Body.String())
	}
	if _, msg := errorBody(t, rec); msg != "not ready: nats" {
		t.Fatalf("message %q", msg)
	}
}
