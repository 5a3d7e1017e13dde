package gateway_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/nats-io/nats.go/micro"
	"github.com/redis/go-redis/v9"

	"github.com/membus/membus/pkg/contract"
	"github.com/membus/membus/pkg/metrics"
	"github.com/membus/membus/services/gateway"
)

func TestRateLimitPerKey(t *testing.T) {
	mr := miniredis.RunT(t)
	shared := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	t.Cleanup(func() { shared.Close() })
	tests := []struct {
		name   string
		redis  bool
		wantB2 int // what the second replica answers for the key once the first used the burst
	}{
		{"without Redis each replica has its own bucket", false, 200},
		{"with Redis the replicas share one bucket", true, 429},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mr.FlushAll()
			opt := func(s *setup) {
				s.cfg.RateBurst = 3
				s.cfg.RateLimit = 1
				if tc.redis {
					s.deps.Redis = shared
				}
			}
			a := newEnv(t, opt)
			bsvc := a.replica(opt)
			secret, _ := a.createKey("acme", "bob", "user")
			hdr := bearer(secret)
			a.serve("memories.list", respond(contract.MemoriesListResponse{V: 1}))
			for i := range 3 {
				if rec := a.do("GET", "/v1/memories", nil, hdr); rec.Code != 200 {
					t.Fatalf("request %d = %d %s", i, rec.Code, rec.Body.String())
				}
			}
			rec := a.do("GET", "/v1/memories", nil, hdr)
			if rec.Code != 429 || rec.Header().Get("Retry-After") == "" {
				t.Fatalf("4th request = %d (Retry-After %q), want 429 with Retry-After", rec.Code, rec.Header().Get("Retry-After"))
			}
			if code, _ := errorBody(t, rec); code != "rate_limited" {
				t.Fatalf("error code %q", code)
			}
			if rec := bsvc.do("GET", "/v1/memories", nil, hdr); rec.Code != tc.wantB2 {
				t.Fatalf("the other replica answered %d, want %d", rec.Code, tc.wantB2)
			}
			// Another key is not limited by this one.
			if rec := a.do("GET", "/v1/memories", nil, bearer(a.userKey)); rec.Code != 200 {
				t.Fatalf("another key = %d", rec.Code)
			}
		})
	}
}

func TestIdempotencySharedThroughRedis(t *testing.T) {
	mr := miniredis.RunT(t)
	shared := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	t.Cleanup(func() { shared.Close() })
	opt := func(s *setup) { s.deps.Redis = shared }
	a := newEnv(t, opt)
	calls := a.serve("memories.forget", func(req micro.Request) {
		_ = req.RespondJSON(contract.MemoriesListResponse{V: 1, Items: []contract.RecallItem{}})
	})
	b := a.replica(opt)
	hdr := bearer(a.userKey)
	hdr["Idempotency-Key"] = "forget-1"
	if rec := a.do("DELETE", "/v1/memories/0b7e5b4e-0000-5000-8000-000000000001", nil, hdr); rec.Code != 204 {
		t.Fatalf("first delete = %d", rec.Code)
	}
	nextCall(t, calls)
	rec := b.do("DELETE", "/v1/memories/0b7e5b4e-0000-5000-8000-000000000001", nil, hdr)
	if rec.Code != 204 || rec.Header().Get("Idempotent-Replayed") != "true" {
		t.Fatalf("retry on the other replica = %d (replayed %q), want the first 204", rec.Code, rec.Header().Get("Idempotent-Replayed"))
	}
	select {
	case c := <-calls:
		t.Fatalf("the retry ran the delete again: %v", c.Body)
	default:
	}
	// The key is scoped to the caller: another user's identical key runs its own request.
	other := bearer(a.otherAccountKey)
	other["Idempotency-Key"] = "forget-1"
	if rec := a.do("DELETE", "/v1/memories/0b7e5b4e-0000-5000-8000-000000000001", nil, other); rec.Header().Get("Idempotent-Replayed") != "" {
		t.Fatalf("another tenant got a replayed answer: %d %s", rec.Code, rec.Body.String())
	}
}

func TestQueryLengthLimit(t *testing.T) {
	e := newEnv(t)
	e.serve("recall", respond(contract.RecallResponse{V: 1, Items: []contract.RecallItem{}}))
	long, _ := json.Marshal(map[string]any{"query": strings.Repeat("é", 4001)})
	rec := e.do("POST", "/v1/recall", long, bearer(e.userKey))
	if rec.Code != 413 {
		t.Fatalf("a 4001-character query = %d, want 413", rec.Code)
	}
	ok, _ := json.Marshal(map[string]any{"query": strings.Repeat("é", 4000)})
	if rec := e.do("POST", "/v1/recall", ok, bearer(e.userKey)); rec.Code != 200 {
		t.Fatalf("a 4000-character query = %d %s", rec.Code, rec.Body.String())
	}
	if rec := e.do("POST", "/v1/memories/forget", long, bearer(e.userKey)); rec.Code != 413 {
		t.Fatalf("forget with a 4001-character query = %d, want 413", rec.Code)
	}
}

func TestStatsRoles(t *testing.T) {
	e := newEnv(t)
	calls := e.serve("stats", respond(contract.StatsResponse{V: 1, Kind: "overview", Account: "x", Overview: &contract.OverviewStats{}}))
	tests := []struct {
		name        string
		key         string
		want        int
		wantAccount string
		wantAll     any
	}{
		{"admin key: its own account", e.adminKey, 200, "acme", nil},
		{"operator key: every account", e.operatorKey, 200, "ops", true},
		{"user key: refused", e.userKey, 403, "", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := e.do("GET", "/v1/stats/overview", nil, bearer(tc.key))
			if rec.Code != tc.want {
				t.Fatalf("status %d %s", rec.Code, rec.Body.String())
			}
			if tc.want != 200 {
				return
			}
			c := nextCall(t, calls)
			if c.Account != tc.wantAccount || c.Body["all_accounts"] != tc.wantAll || c.Body["kind"] != "overview" {
				t.Fatalf("stats call %+v", c)
			}
		})
	}
	if rec := e.do("GET", "/v1/stats/trends?days=-1", nil, bearer(e.adminKey)); rec.Code != 400 {
		t.Fatalf("negative days = %d", rec.Code)
	}
}

func TestEraseUserIsAdminOnly(t *testing.T) {
	e := newEnv(t)
	calls := e.serve("erase", respond(contract.EraseResult{V: 1, UserID: "bob"}))
	if rec := e.do("DELETE", "/v1/users/bob", nil, bearer(e.userKey)); rec.Code != 403 {
		t.Fatalf("user key = %d, want 403", rec.Code)
	}
	if rec := e.do("DELETE", "/v1/users/bob", nil, bearer(e.operatorKey)); rec.Code != 403 {
		t.Fatalf("operator key = %d, want 403", rec.Code)
	}
	if rec := e.do("DELETE", "/v1/users/bob", nil, bearer(e.adminKey)); rec.Code != 200 {
		t.Fatalf("admin key = %d %s", rec.Code, rec.Body.String())
	}
	if c := nextCall(t, calls); c.Account != "acme" || c.Body["user_id"] != "bob" || c.Body["session_id"] != nil {
		t.Fatalf("erase call %+v", c)
	}
}

// replica is a second gateway over the same NATS and key store (another replica).
func (e *env) replica(opts ...envOption) *env {
	e.t.Helper()
	s := &setup{cfg: gateway.Defaults(), deps: gateway.Deps{NC: e.nc, JS: e.js, Names: e.names, Keys: e.store,
		Metrics: metrics.New("gateway", "replica"), Now: func() time.Time { return fixedNow }}}
	for _, o := range opts {
		o(s)
	}
	svc, err := gateway.New(s.cfg, s.deps)
	if err != nil {
		e.t.Fatal(err)
	}
	r := *e
	r.svc = svc
	return &r
}
