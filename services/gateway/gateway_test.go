package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nats.go/micro"

	"github.com/membus/membus/pkg/bus"
	"github.com/membus/membus/pkg/metrics"
	"github.com/membus/membus/pkg/store"
	"github.com/membus/membus/pkg/testenv"
	"github.com/membus/membus/services/gateway"
)

// fixedNow is the fake clock of every test service.
var fixedNow = time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)

// env is one gateway over an in-process JetStream server and a SQLite key store.
type env struct {
	t     *testing.T
	nc    *nats.Conn
	js    jetstream.JetStream
	names bus.Names
	store *store.Store
	svc   *gateway.Service

	userKey, adminKey, operatorKey, revokedKey, otherAccountKey string
}

// setup is what an envOption may change before the service is built.
type setup struct {
	cfg       gateway.Config
	deps      gateway.Deps
	noStreams bool // leave JetStream without the membus streams
}

type envOption func(*setup)

func newEnv(t *testing.T, opts ...envOption) *env {
	t.Helper()
	ctx := context.Background()
	_, nc := testenv.NATS(t)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	names, err := bus.NewNames("")
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.OpenSQLite(ctx, filepath.Join(t.TempDir(), "keys.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	e := &env{t: t, nc: nc, js: js, names: names, store: st}
	e.userKey, _ = e.createKey("acme", "alice", store.RoleUser)
	e.adminKey, _ = e.createKey("acme", "", store.RoleAdmin)
	e.operatorKey, _ = e.createKey("ops", "", store.RoleOperator)
	e.otherAccountKey, _ = e.createKey("globex", "carol", store.RoleUser)
	var revokedID string
	e.revokedKey, revokedID = e.createKey("acme", "alice", store.RoleUser)
	if err := st.RevokeKey(ctx, revokedID); err != nil {
		t.Fatal(err)
	}

	s := &setup{cfg: gateway.Defaults(), deps: gateway.Deps{NC: nc, JS: js, Names: names, Keys: st,
		Metrics: metrics.New("gateway", "test"), Now: func() time.Time { return fixedNow }}}
	for _, o := range opts {
		o(s)
	}
	if !s.noStreams {
		if err := bus.EnsureStreams(ctx, js, names, bus.StreamLimits{}); err != nil {
			t.Fatal(err)
		}
	}
	svc, err := gateway.New(s.cfg, s.deps)
	if err != nil {
		t.Fatal(err)
	}
	e.svc = svc
	return e
}

func (e *env) createKey(account, user, role string) (secret, id string) {
	e.t.Helper()
	secret, k, err := e.store.CreateKey(context.Background(), account, user, role, "test")
	if err != nil {
		e.t.Fatal(err)
	}
	return secret, k.ID
}

// do serves one request through the gateway's handler.
func (e *env) do(method, path string, body any, hdr map[string]string) *httptest.ResponseRecorder {
	e.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		data, err := json.Marshal(b)
		if err != nil {
			e.t.Fatal(err)
		}
		rd = bytes.NewReader(data)
	}
	req := httptest.NewRequest(method, path, rd)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	e.svc.Handler().ServeHTTP(rec, req)
	return rec
}

// rpcCall is one request a fake responder received.
type rpcCall struct {
	Subject string
	Account string
	Body    map[string]any
}

// serve registers a fake responder for op that records each call and answers with answer.
func (e *env) serve(op string, answer func(req micro.Request)) <-chan rpcCall {
	e.t.Helper()
	srv, err := bus.NewRPCServer(e.nc, e.names, "fake-"+strings.ReplaceAll(op, ".", "-"), "0.0.1")
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { _ = srv.Stop() })
	calls := make(chan rpcCall, 16)
	err = srv.Handle(op, func(_ context.Context, account string, req micro.Request) {
		var body map[string]any
		_ = json.Unmarshal(req.Data(), &body)
		calls <- rpcCall{Subject: req.Subject(), Account: account, Body: body}
		answer(req)
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return calls
}

func respond(v any) func(micro.Request) {
	return func(req micro.Request) { _ = bus.RespondJSON(req, v) }
}

func respondError(code, msg string) func(micro.Request) {
	return func(req micro.Request) { _ = bus.RespondError(req, code, errors.New(msg)) }
}

func nextCall(t *testing.T, calls <-chan rpcCall) rpcCall {
	t.Helper()
	select {
	case c := <-calls:
		return c
	case <-time.After(5 * time.Second):
		t.Fatal("the responder received no call")
		return rpcCall{}
	}
}

func bearer(key string) map[string]string { return map[string]string{"Authorization": "Bearer " + key} }

// errorBody decodes {"error": {...}} and checks its shape.
func errorBody(t *testing.T, rec *httptest.ResponseRecorder) (code, message string) {
	t.Helper()
	var body struct {
		Error struct {
			Code      string `json:"code"`
			Message   string `json:"message"`
			RequestID string `json:"request_id"`
		} `json:"error"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
		t.Fatalf("error body %q: %v", rec.Body.String(), err)
	}
	if body.Error.Code == "" || body.Error.Message == "" {
		t.Fatalf("error body without code or message: %s", rec.Body.String())
	}
	if body.Error.RequestID == "" || body.Error.RequestID != rec.Header().Get("X-Request-Id") {
		t.Fatalf("error body request_id %q, header %q", body.Error.RequestID, rec.Header().Get("X-Request-Id"))
	}
	return body.Error.Code, body.Error.Message
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name    string
		mod     func(*gateway.Config)
		wantKey string // "" = valid
	}{
		{"defaults are valid", func(*gateway.Config) {}, ""},
		{"insecure on loopback is allowed", func(c *gateway.Config) { c.InsecureNoAuth = true }, ""},
		{"insecure on localhost is allowed", func(c *gateway.Config) { c.InsecureNoAuth, c.Addr = true, "localhost:9000" }, ""},
		{"insecure on every interface is refused", func(c *gateway.Config) { c.InsecureNoAuth, c.Addr = true, ":8080" }, "insecure_no_auth"},
		{"insecure on a public address is refused", func(c *gateway.Config) { c.InsecureNoAuth, c.Addr = true, "10.0.0.1:8080" }, "insecure_no_auth"},
		{"address without port", func(c *gateway.Config) { c.Addr = "localhost" }, "http_addr"},
		{"zero body limit", func(c *gateway.Config) { c.MaxBodyBytes = 0 }, "max_body_bytes"},
		{"zero messages limit", func(c *gateway.Config) { c.MaxMessagesPerRequest = 0 }, "max_messages_per_request"},
		{"zero rpc timeout", func(c *gateway.Config) { c.RPCTimeout = 0 }, "rpc_timeout"},
		{"zero commit timeout", func(c *gateway.Config) { c.CommitTimeout = 0 }, "commit_timeout"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := gateway.Defaults()
			tc.mod(&c)
			err := c.Validate()
			if tc.wantKey == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if err == nil || !errors.Is(err, gateway.ErrConfig) || !strings.Contains(err.Error(), tc.wantKey) {
				t.Fatalf("Validate = %v, want an ErrConfig naming %s", err, tc.wantKey)
			}
		})
	}
}

func TestNewRequiresKeysUnlessInsecure(t *testing.T) {
	_, nc := testenv.NATS(t)
	js, _ := jetstream.New(nc)
	names, _ := bus.NewNames("")
	if _, err := gateway.New(gateway.Defaults(), gateway.Deps{NC: nc, JS: js, Names: names}); err == nil {
		t.Fatal("New without a key store and with auth on: want an error")
	}
	cfg := gateway.Defaults()
	cfg.InsecureNoAuth = true
	if _, err := gateway.New(cfg, gateway.Deps{NC: nc, JS: js, Names: names}); err != nil {
		t.Fatalf("New in insecure mode without keys: %v", err)
	}
}

func TestRunTakenPortNamesTheSetting(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	e := newEnv(t, func(s *setup) { s.cfg.Addr = ln.Addr().String() })
	err = e.svc.Run(context.Background())
	if !errors.Is(err, gateway.ErrListen) {
		t.Fatalf("Run on a taken port = %v, want ErrListen", err)
	}
	for _, want := range []string{ln.Addr().String(), "--http-addr", "MEMBUS_HTTP_ADDR"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
}

func TestRunServesAndShutsDownOnCancel(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	e := newEnv(t, func(s *setup) { s.cfg.Addr = addr })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.svc.Run(ctx) }()

	var resp *http.Response
	testenv.Eventually(t, 5*time.Second, 20*time.Millisecond, func() error {
		var err error
		if resp, err = http.Get("http://" + addr + "/healthz"); err != nil {
			return fmt.Errorf("gateway does not answer: %w", err)
		}
		return nil
	})
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("healthz = %d", resp.StatusCode)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run after cancel = %v, want nil", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
}
