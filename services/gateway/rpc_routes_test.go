package gateway_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/micro"

	"github.com/membus/membus/pkg/contract"
)

// TestTenancyAccountAlwaysFromTheKey sends every data route with another tenant's ids in the
// URL, query, headers and body: the RPC subject's account and the user_id are always the key's.
func TestTenancyAccountAlwaysFromTheKey(t *testing.T) {
	e := newEnv(t)
	calls := map[string]<-chan rpcCall{
		"session.get":     e.serve("session.get", respond(contract.SessionMeta{V: 1})),
		"commit":          e.serve("commit", respond(contract.CommitResult{V: 1, OK: true, Status: "completed"})),
		"context":         e.serve("context", respond(contract.ContextResponse{V: 1})),
		"recall":          e.serve("recall", respond(contract.RecallResponse{V: 1})),
		"memories.list":   e.serve("memories.list", respond(contract.MemoriesListResponse{V: 1})),
		"memories.get":    e.serve("memories.get", respond(contract.RecallItem{ID: "m1"})),
		"memories.forget": e.serve("memories.forget", respond(map[string]any{"v": 1})),
	}
	hdr := bearer(e.userKey)
	hdr["X-Membus-Account"] = "globex"
	tests := []struct {
		name, method, path, op string
		body                   any
		wantStatus             int
	}{
		{"session meta", "GET", "/v1/sessions/s1?account_id=globex", "session.get", nil, 200},
		{"commit", "POST", "/v1/sessions/s1/commit", "commit", `{"account_id":"globex","user_id":"carol"}`, 200},
		{"context", "GET", "/v1/sessions/s1/context?token_budget=500&account_id=globex", "context", nil, 200},
		{"recall", "POST", "/v1/recall", "recall", `{"query":"tea","user_id":"carol","account_id":"globex"}`, 200},
		{"memories list", "GET", "/v1/memories?user_id=carol&account_id=globex", "memories.list", nil, 200},
		{"memory get", "GET", "/v1/memories/m1", "memories.get", nil, 200},
		{"memory forget", "DELETE", "/v1/memories/m1", "memories.forget", nil, 204},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := e.do(tc.method, tc.path, tc.body, hdr)
			if rec.Code != tc.wantStatus {
				t.Fatalf("status %d, want %d: %s", rec.Code, tc.wantStatus, rec.Body.String())
			}
			c := nextCall(t, calls[tc.op])
			if c.Account != "acme" || !strings.HasPrefix(c.Subject, "membus.rpc.acme.") {
				t.Fatalf("subject %s (account %s), want account acme", c.Subject, c.Account)
			}
			if c.Body["user_id"] != "alice" {
				t.Fatalf("user_id %v, want alice", c.Body["user_id"])
			}
		})
	}
}

func TestRouteRequestShapes(t *testing.T) {
	e := newEnv(t)
	ctxCalls := e.serve("context", respond(contract.ContextResponse{V: 1, Summary: "sum", EstimatedTokens: 7}))
	listCalls := e.serve("memories.list", respond(contract.MemoriesListResponse{V: 1}))
	recallCalls := e.serve("recall", respond(contract.RecallResponse{V: 1, Items: []contract.RecallItem{{ID: "m1", Text: "likes tea"}}, Block: "b"}))

	rec := e.do("GET", "/v1/sessions/s1/context?token_budget=1234&agent_id=coder", nil, bearer(e.userKey))
	c := nextCall(t, ctxCalls)
	if rec.Code != 200 || c.Body["token_budget"] != float64(1234) || c.Body["session_id"] != "s1" || c.Body["agent_id"] != "coder" {
		t.Fatalf("context: %d %s, request %v", rec.Code, rec.Body.String(), c.Body)
	}
	var cr contract.ContextResponse
	if err := json.Unmarshal(rec.Body.Bytes(), &cr); err != nil || cr.Summary != "sum" || cr.EstimatedTokens != 7 {
		t.Fatalf("context answer %s", rec.Body.String())
	}
	if rec := e.do("GET", "/v1/sessions/s1/context?token_budget=-1", nil, bearer(e.userKey)); rec.Code != 400 {
		t.Fatalf("negative token_budget: %d", rec.Code)
	}

	rec = e.do("GET", "/v1/memories?scope=agent&category=preferences&agent_id=coder&limit=5", nil, bearer(e.userKey))
	c = nextCall(t, listCalls)
	if rec.Code != 200 || c.Body["scope"] != "agent" || c.Body["category"] != "preferences" || c.Body["agent_id"] != "coder" || c.Body["limit"] != float64(5) {
		t.Fatalf("memories.list: %d, request %v", rec.Code, c.Body)
	}
	if !strings.Contains(rec.Body.String(), `"items":[]`) {
		t.Errorf("empty list answered %s, want items []", rec.Body.String())
	}
	if rec := e.do("GET", "/v1/memories?limit=x", nil, bearer(e.userKey)); rec.Code != 400 {
		t.Fatalf("bad limit: %d", rec.Code)
	}

	rec = e.do("POST", "/v1/recall", `{"query":"what do I drink","limit":3,"scopes":["user"]}`, bearer(e.userKey))
	c = nextCall(t, recallCalls)
	if rec.Code != 200 || c.Body["query"] != "what do I drink" || c.Body["limit"] != float64(3) || c.Body["v"] != float64(1) {
		t.Fatalf("recall: %d, request %v", rec.Code, c.Body)
	}
	var rr contract.RecallResponse
	if err := json.Unmarshal(rec.Body.Bytes(), &rr); err != nil || len(rr.Items) != 1 || rr.Items[0].Text != "likes tea" {
		t.Fatalf("recall answer %s", rec.Body.String())
	}
}

func TestCommitRequest(t *testing.T) {
	e := newEnv(t, func(s *setup) { s.cfg.CommitTimeout = 3 * time.Second })
	calls := e.serve("commit", respond(contract.CommitResult{V: 1, OK: true, Status: "completed", Compacted: true,
		ArchiveID: "a1", Memories: map[string]int{"preferences": 2}, TokensBefore: 900, TokensAfter: 100}))
	withKey := func(k string) map[string]string {
		h := bearer(e.userKey)
		h["Idempotency-Key"] = k
		return h
	}
	tests := []struct {
		name        string
		path        string
		body        string
		hdr         map[string]string
		wantWait    bool
		wantTimeout float64
		wantAgent   any
		wantKeep    any
	}{
		{"empty body: wait with the default timeout", "/v1/sessions/s1/commit", "", bearer(e.userKey), true, 3000, nil, nil},
		{"wait false", "/v1/sessions/s1/commit", `{"wait":false}`, bearer(e.userKey), false, 3000, nil, nil},
		{"explicit timeout and keep_recent", "/v1/sessions/s1/commit", `{"timeout_ms":1500,"keep_recent":4}`, bearer(e.userKey), true, 1500, nil, float64(4)},
		{"agent from the query", "/v1/sessions/s1/commit?agent_id=coder", `{}`, withKey("c-1"), true, 3000, "coder", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := e.do("POST", tc.path, tc.body, tc.hdr)
			if rec.Code != 200 {
				t.Fatalf("status %d: %s", rec.Code, rec.Body.String())
			}
			var res contract.CommitResult
			if err := json.Unmarshal(rec.Body.Bytes(), &res); err != nil || !res.OK || res.Status != "completed" || res.Memories["preferences"] != 2 || res.TokensAfter != 100 {
				t.Fatalf("commit answer %s", rec.Body.String())
			}
			c := nextCall(t, calls)
			b := c.Body
			if b["kind"] != "sync" || b["session_id"] != "s1" || b["wait"] != tc.wantWait || b["timeout_ms"] != tc.wantTimeout ||
				b["agent_id"] != tc.wantAgent || b["keep_recent"] != tc.wantKeep || b["request_id"] == "" {
				t.Fatalf("commit request %v", b)
			}
		})
	}

	t.Run("a retry with the same Idempotency-Key is answered with the first result and runs nothing", func(t *testing.T) {
		first := e.do("POST", "/v1/sessions/s1/commit", "", withKey("c-2"))
		if first.Code != 200 {
			t.Fatalf("status %d", first.Code)
		}
		nextCall(t, calls)
		again := e.do("POST", "/v1/sessions/s1/commit", "", withKey("c-2"))
		if again.Code != 200 || again.Body.String() != first.Body.String() || again.Header().Get("Idempotent-Replayed") != "true" {
			t.Fatalf("retry = %d %q (replayed %q), want the first answer %q", again.Code, again.Body.String(),
				again.Header().Get("Idempotent-Replayed"), first.Body.String())
		}
		// The fake records a call before it answers, and the gateway waits for the answer: a
		// retry that reached the RPC is in calls by now, so no wait is needed to see it.
		select {
		case c := <-calls:
			t.Fatalf("the retry reached the commit RPC: %v", c.Body)
		default:
		}
		if rec := e.do("POST", "/v1/sessions/s1/commit", `{"wait":false}`, withKey("c-2")); rec.Code != 422 {
			t.Fatalf("the same key with another body = %d, want 422", rec.Code)
		}
		var ids []any
		for range 2 {
			if rec := e.do("POST", "/v1/sessions/s1/commit", "", bearer(e.userKey)); rec.Code != 200 {
				t.Fatalf("status %d", rec.Code)
			}
			ids = append(ids, nextCall(t, calls).Body["request_id"])
		}
		if ids[0] == ids[1] {
			t.Errorf("requests without a key share a request id: %v", ids)
		}
	})

	for _, body := range []string{`{"timeout_ms":0}`, `{"keep_recent":-1}`, `{"wait":"yes"}`} {
		if rec := e.do("POST", "/v1/sessions/s1/commit", body, bearer(e.userKey)); rec.Code != 400 {
			t.Errorf("commit %s: %d, want 400", body, rec.Code)
		}
	}
}

func TestRPCErrorMapping(t *testing.T) {
	e := newEnv(t, func(s *setup) { s.cfg.RPCTimeout = 300 * time.Millisecond })
	e.serve("memories.get", func(req micro.Request) {
		switch {
		case strings.Contains(string(req.Data()), `"missing"`):
			respondError("not_found", "no such memory")(req)
		case strings.Contains(string(req.Data()), `"bad"`):
			respondError("bad_request", "memory id is malformed")(req)
		case strings.Contains(string(req.Data()), `"down"`):
			respondError("unavailable", "vector store down")(req)
		case strings.Contains(string(req.Data()), `"boom"`):
			respondError("internal", "secret stack trace")(req)
		case strings.Contains(string(req.Data()), `"junk"`):
			_ = req.Respond([]byte("not json"))
		case strings.Contains(string(req.Data()), `"slow"`):
			// never answers
		}
	})
	tests := []struct {
		name       string
		path       string
		wantStatus int
		wantCode   string
		wantInMsg  string
		notInMsg   string
	}{
		{"not_found is 404", "/v1/memories/missing", 404, "not_found", "no such memory", ""},
		{"bad_request is 400", "/v1/memories/bad", 400, "bad_request", "malformed", ""},
		{"unavailable is 503", "/v1/memories/down", 503, "unavailable", "vector store down", ""},
		{"internal is 500 without the detail", "/v1/memories/boom", 500, "internal", "memories.get", "secret"},
		{"an unreadable answer is 500", "/v1/memories/junk", 500, "internal", "unreadable", ""},
		{"no answer in time is 503", "/v1/memories/slow", 503, "unavailable", "timed out", ""},
		{"no responder is 503", "/v1/memories", 503, "unavailable", "memories.list", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := e.do("GET", tc.path, nil, bearer(e.userKey))
			if rec.Code != tc.wantStatus {
				t.Fatalf("status %d, want %d: %s", rec.Code, tc.wantStatus, rec.Body.String())
			}
			code, msg := errorBody(t, rec)
			if code != tc.wantCode || !strings.Contains(msg, tc.wantInMsg) || (tc.notInMsg != "" && strings.Contains(msg, tc.notInMsg)) {
				t.Fatalf("error %s: %q", code, msg)
			}
		})
	}
}

func TestRequestIDAndUnmatchedRoutes(t *testing.T) {
	e := newEnv(t)
	rec := e.do("GET", "/healthz", nil, map[string]string{"X-Request-Id": "abc-123"})
	if got := rec.Header().Get("X-Request-Id"); got != "abc-123" {
		t.Errorf("request id %q, want the caller's echoed", got)
	}
	rec = e.do("GET", "/healthz", nil, map[string]string{"X-Request-Id": "bad id\twith spaces"})
	if got := rec.Header().Get("X-Request-Id"); got == "" || strings.Contains(got, " ") {
		t.Errorf("insane request id kept: %q", got)
	}
	if rec.Body.String() != "{\"status\":\"ok\"}\n" {
		t.Errorf("healthz body %q", rec.Body.String())
	}

	rec = e.do("GET", "/v1/nowhere", nil, nil)
	if code, _ := errorBody(t, rec); rec.Code != 404 || code != "not_found" {
		t.Errorf("unknown route: %d %s", rec.Code, code)
	}
	rec = e.do("PUT", "/v1/recall", nil, nil)
	if code, _ := errorBody(t, rec); rec.Code != http.StatusMethodNotAllowed || code != "method_not_allowed" || rec.Header().Get("Allow") == "" {
		t.Errorf("wrong method: %d %s allow %q", rec.Code, code, rec.Header().Get("Allow"))
	}
}

func TestMetricsCountRequestsByRoute(t *testing.T) {
	e := newEnv(t)
	e.do("GET", "/v1/sessions/s1", nil, nil) // 401
	e.do("GET", "/v1/nowhere", nil, nil)     // 404
	rec := e.do("GET", "/metrics", nil, nil)
	out := rec.Body.String()
	for _, want := range []string{
		`membus_gateway_http_requests_total{route="GET /v1/sessions/{session_id}",service="gateway",status="401"} 1`,
		`membus_gateway_http_requests_total{route="unmatched",service="gateway",status="404"} 1`,
		`membus_gateway_http_request_duration_seconds_count{route="unmatched",service="gateway",status="404"} 1`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if strings.Contains(out, "/v1/nowhere") {
		t.Error("an unmatched path became a label value")
	}
}

// syncBuffer is a log sink safe for concurrent writes.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestRequestLogLineHasNoBody(t *testing.T) {
	var logs syncBuffer
	e := newEnv(t, func(s *setup) { s.deps.Logger = slog.New(slog.NewJSONHandler(&logs, nil)) })
	hdr := bearer(e.userKey)
	hdr["X-Request-Id"] = "req-77"
	rec := e.do("POST", "/v1/sessions/s1/messages", `{"messages":[{"role":"user","content":"my secret diary"}]}`, hdr)
	if rec.Code != 202 {
		t.Fatalf("status %d", rec.Code)
	}
	var line map[string]any
	for _, l := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil && m["msg"] == "http request" {
			line = m
		}
	}
	if line == nil {
		t.Fatalf("no request log line in %s", logs.String())
	}
	if line["method"] != "POST" || line["route"] != "POST /v1/sessions/{session_id}/messages" ||
		line["status"] != float64(202) || line["request_id"] != "req-77" || line["duration_ms"] == nil {
		t.Fatalf("log line %v", line)
	}
	if strings.Contains(logs.String(), "secret diary") || strings.Contains(logs.String(), e.userKey) {
		t.Fatal("the log holds the body or the key")
	}
}

// TestListMemoriesCursor: the cursor goes to memories.list as given, next_cursor comes back in
// the body, recall's bad_request for a cursor it did not hand out is a 400 that says why, and
// an over-long cursor is refused before any RPC.
func TestListMemoriesCursor(t *testing.T) {
	e := newEnv(t)
	calls := e.serve("memories.list", func(req micro.Request) {
		if strings.Contains(string(req.Data()), `"cursor":"garbled"`) {
			respondError("bad_request", "bad request: bad cursor: unknown format")(req)
			return
		}
		respond(contract.MemoriesListResponse{V: 1, Items: []contract.RecallItem{{ID: "m2", Kind: "memory", Text: "likes tea", Sources: []string{}}}, NextCursor: "bTEuMi5tMg"})(req)
	})
	tests := []struct {
		name       string
		query      string
		wantStatus int
		wantCursor any    // the cursor the RPC received (nil: absent)
		wantBody   string // a fragment of the answer
		noRPC      bool
	}{
		{"the first page sends no cursor and returns next_cursor", "limit=1", 200, nil, `"next_cursor":"bTEuMi5tMg"`, false},
		{"a cursor goes to the RPC unchanged", "limit=1&cursor=bTEuMS5tMQ", 200, "bTEuMS5tMQ", `"next_cursor":"bTEuMi5tMg"`, false},
		{"a cursor recall refuses is a 400 that names it", "cursor=garbled", 400, "garbled", "bad cursor", false},
		{"an over-long cursor is a 400 without an RPC", "cursor=" + strings.Repeat("A", 257), 400, nil, "cursor is at most 256", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := e.do("GET", "/v1/memories?"+tc.query, nil, bearer(e.userKey))
			if rec.Code != tc.wantStatus || !strings.Contains(rec.Body.String(), tc.wantBody) {
				t.Fatalf("%d %s, want %d with %s", rec.Code, rec.Body.String(), tc.wantStatus, tc.wantBody)
			}
			if tc.noRPC {
				select {
				case c := <-calls:
					t.Fatalf("memories.list was called: %v", c.Body)
				default:
				}
				return
			}
			if c := nextCall(t, calls); c.Body["cursor"] != tc.wantCursor {
				t.Errorf("the RPC got cursor %v, want %v", c.Body["cursor"], tc.wantCursor)
			}
		})
	}
}
