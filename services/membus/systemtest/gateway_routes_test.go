package systemtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/membus/membus/pkg/bus"
	"github.com/membus/membus/pkg/contract"
	"github.com/membus/membus/pkg/store"
	"github.com/membus/membus/pkg/testenv"
	"github.com/membus/membus/services/membus/internal/app"
)

// httpClient talks to the embedded gateway with one API key.
type httpClient struct {
	t    *testing.T
	base string
	key  string
	hdr  map[string]string
}

func newClient(t *testing.T, env *app.Env, base, account, user, role string) *httpClient {
	t.Helper()
	key, _, err := env.Store.CreateKey(context.Background(), account, user, role, "test")
	if err != nil {
		t.Fatal(err)
	}
	return &httpClient{t: t, base: base, key: key, hdr: map[string]string{}}
}

func (c *httpClient) do(method, path string, body any, hdr ...string) (int, []byte, http.Header) {
	c.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case []byte:
		rd = bytes.NewReader(b)
	case string:
		rd = strings.NewReader(b)
	default:
		data, _ := json.Marshal(b)
		rd = bytes.NewReader(data)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	req.Header.Set("Authorization", "Bearer "+c.key)
	for k, v := range c.hdr {
		req.Header.Set(k, v)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode == http.StatusTooManyRequests && resp.Header.Get("Retry-After") != "" {
		// A well-behaved client: wait as told and retry (the per-key limit is 20/s, burst 40).
		time.Sleep(time.Second)
		return c.do(method, path, body, hdr...)
	}
	return resp.StatusCode, b, resp.Header
}

// must runs a request and fails unless it answers want; it decodes the body into out.
func (c *httpClient) must(want int, method, path string, body, out any, hdr ...string) []byte {
	c.t.Helper()
	code, b, _ := c.do(method, path, body, hdr...)
	if code != want {
		c.t.Fatalf("%s %s = %d %s, want %d", method, path, code, b, want)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			c.t.Fatalf("%s %s: decode %s: %v", method, path, b, err)
		}
	}
	return b
}

func postTurn(c *httpClient, session string, texts ...string) {
	c.t.Helper()
	var msgs []map[string]any
	for i, tx := range texts {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		msgs = append(msgs, map[string]any{"role": role, "content": tx, "external_id": fmt.Sprintf("%s-%d", session, i)})
	}
	c.must(http.StatusAccepted, "POST", "/v1/sessions/"+session+"/messages", map[string]any{"messages": msgs}, nil)
}

// TestGatewayRoutes exercises every route of the gateway over real HTTP against the embedded
// system (`membus up` in-process).
func TestGatewayRoutes(t *testing.T) {
	env, base := startEmbedded(t, t.TempDir())
	alice := newClient(t, env, base, "acme", "alice", store.RoleUser)
	admin := newClient(t, env, base, "acme", "", store.RoleAdmin)
	operator := newClient(t, env, base, "ops", "", store.RoleOperator)

	for _, p := range []string{"/healthz", "/readyz", "/metrics", "/openapi.yaml"} {
		if code, b, _ := alice.do("GET", p, nil); code != 200 || len(b) == 0 {
			t.Fatalf("GET %s = %d", p, code)
		}
	}

	postTurn(alice, "s-1", "I live in Boston and I have a dog named Max.", "Nice! Boston is a great city.",
		"I really love black coffee in the morning.")
	var res contract.CommitResult
	alice.must(200, "POST", "/v1/sessions/s-1/commit", map[string]any{"wait": true, "keep_recent": 0}, &res)
	if res.Status != contract.StatusCompleted || res.ArchiveID == "" {
		t.Fatalf("commit = %+v", res)
	}
	var meta contract.SessionMeta
	alice.must(200, "GET", "/v1/sessions/s-1", nil, &meta)
	if meta.MessageCount != 3 || meta.CommitCount != 1 {
		t.Fatalf("meta = %+v", meta)
	}
	var ctxResp contract.ContextResponse
	alice.must(200, "GET", "/v1/sessions/s-1/context?token_budget=8000", nil, &ctxResp)
	var rec contract.RecallResponse
	alice.must(200, "POST", "/v1/recall", map[string]any{"query": "Where does Caroline live?", "trace": true}, &rec)
	if len(rec.Items) == 0 || !strings.Contains(rec.Items[0].Text, "Boston") || len(rec.Trace) == 0 {
		t.Fatalf("recall = %+v", rec)
	}
	var search contract.ArchiveSearchResponse
	alice.must(200, "GET", "/v1/sessions/s-1/archives/search?q=coffee", nil, &search)
	if len(search.Archives) != 1 {
		t.Fatalf("archive search = %+v", search)
	}
	var expand contract.ArchiveExpandResponse
	alice.must(200, "GET", "/v1/archives/"+res.ArchiveID, nil, &expand)
	if len(expand.Messages) != 3 {
		t.Fatalf("expand = %+v", expand)
	}

	// Memories: list with filters, get, store, forget by query and by id.
	var list contract.MemoriesListResponse
	alice.must(200, "GET", "/v1/memories", nil, &list)
	if len(list.Items) == 0 {
		t.Fatal("no memories listed")
	}
	var filtered contract.MemoriesListResponse
	alice.must(200, "GET", "/v1/memories?category=preference&scope=user", nil, &filtered)
	for _, it := range filtered.Items {
		if it.Category != "preference" {
			t.Fatalf("category filter let through %+v", it)
		}
	}
	future := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	var none contract.MemoriesListResponse
	alice.must(200, "GET", "/v1/memories?since="+future, nil, &none)
	if len(none.Items) != 0 {
		t.Fatalf("since a future time listed %d items", len(none.Items))
	}
	var until contract.MemoriesListResponse
	alice.must(200, "GET", "/v1/memories?until="+future+"&agent_id=main", nil, &until)
	if len(until.Items) == 0 {
		t.Fatal("until a future time listed nothing")
	}
	var one contract.RecallItem
	alice.must(200, "GET", "/v1/memories/"+list.Items[0].ID, nil, &one)

	var stored struct {
		SessionID string                `json:"session_id"`
		Result    contract.CommitResult `json:"result"`
	}
	alice.must(200, "POST", "/v1/memories", map[string]any{"text": "My favourite colour is teal."}, &stored, "Idempotency-Key", "store-1")
	if stored.Result.Status != contract.StatusCompleted || !strings.HasPrefix(stored.SessionID, "membus-store-main-") {
		t.Fatalf("store = %+v", stored)
	}
	var again struct {
		Result contract.CommitResult `json:"result"`
	}
	code, b, h := alice.do("POST", "/v1/memories", map[string]any{"text": "My favourite colour is teal."}, "Idempotency-Key", "store-1")
	if code != 200 || h.Get("Idempotent-Replayed") != "true" || json.Unmarshal(b, &again) != nil || again.Result.ArchiveID != stored.Result.ArchiveID {
		t.Fatalf("store retry = %d %s", code, b)
	}

	var forget struct {
		Deleted    []contract.RecallItem `json:"deleted"`
		Candidates []contract.RecallItem `json:"candidates"`
	}
	alice.must(200, "POST", "/v1/memories/forget", map[string]any{"query": "zebra quantum violin"}, &forget)
	if len(forget.Deleted) != 0 {
		t.Fatalf("a weak query deleted %+v", forget.Deleted)
	}
	alice.must(204, "DELETE", "/v1/memories/"+list.Items[0].ID, nil, nil)
	alice.must(404, "GET", "/v1/memories/"+list.Items[0].ID, nil, nil)

	// Digests: the summarizer's RPC; with none serving it the answer is 503, never a hang.
	if code, b, _ := alice.do("GET", "/v1/summaries?period=day&date=2026-11-01", nil); code != 200 && code != 503 && code != 404 {
		t.Fatalf("summaries = %d %s", code, b)
	}
	alice.must(400, "GET", "/v1/summaries?period=year", nil, nil)

	// Stats: admin sees its account, operator every account; user keys are refused.
	var ov contract.StatsResponse
	admin.must(200, "GET", "/v1/stats/overview", nil, &ov)
	if ov.Account != "acme" || ov.Overview == nil || ov.Overview.Sessions < 1 || ov.Overview.Messages < 3 || ov.Overview.Commits < 1 {
		t.Fatalf("admin overview = %+v", ov)
	}
	var cats, trends, agents contract.StatsResponse
	admin.must(200, "GET", "/v1/stats/categories", nil, &cats)
	admin.must(200, "GET", "/v1/stats/trends?days=7", nil, &trends)
	operator.must(200, "GET", "/v1/stats/agents", nil, &agents)
	if len(cats.Categories) == 0 || len(trends.Trends) != 7 || len(agents.Agents) == 0 || agents.Account != "*" || agents.Agents[0].AccountID != "acme" {
		t.Fatalf("stats: categories %+v trends %+v agents %+v", cats, trends, agents)
	}
	var today int64
	for _, d := range trends.Trends {
		today += d.Messages
	}
	if today < 3 {
		t.Fatalf("trends count %d messages, want ≥ 3", today)
	}
	alice.must(403, "GET", "/v1/stats/overview", nil, nil)

	// Erasure: the session, then the user.
	var er contract.EraseResult
	alice.must(200, "DELETE", "/v1/sessions/s-1", nil, &er)
	if er.Messages != 3 || er.Archives != 1 {
		t.Fatalf("erase session = %+v", er)
	}
	// The points: the memories, the three archived messages and the session contexts of their
	// two speakers (the user and the assistant).
	if want := int(er.Memories) + 3 + 2; er.Vectors != want {
		t.Errorf("erase session counts %d vector points, want %d (%+v)", er.Vectors, want, er)
	}
	alice.must(404, "GET", "/v1/sessions/s-1", nil, nil)
	admin.must(200, "DELETE", "/v1/users/alice", nil, &er)
	alice.must(200, "GET", "/v1/memories", nil, &list)
	if len(list.Items) != 0 {
		t.Fatalf("after erasing the user, memories %+v", list.Items)
	}
}

// TestGatewayBadInput: malformed or hostile requests get a clear 4xx, store nothing, and the
// service keeps answering.
func TestGatewayBadInput(t *testing.T) {
	env, base := startEmbedded(t, t.TempDir())
	c := newClient(t, env, base, "acme", "bob", store.RoleUser)
	huge := `{"messages":[{"role":"user","content":"` + strings.Repeat("a", 2<<20) + `"}]}`
	tests := []struct {
		name   string
		method string
		path   string
		body   any
		want   int
	}{
		{"malformed JSON", "POST", "/v1/sessions/bad/messages", `{"messages":[`, 400},
		{"wrong type", "POST", "/v1/sessions/bad/messages", `{"messages":"hello"}`, 400},
		{"unknown role", "POST", "/v1/sessions/bad/messages", `{"messages":[{"role":"wizard","content":"x"}]}`, 400},
		{"huge body", "POST", "/v1/sessions/bad/messages", huge, 413},
		{"too many messages", "POST", "/v1/sessions/bad/messages", map[string]any{"messages": make([]map[string]string, 101)}, 413},
		{"invalid UTF-8", "POST", "/v1/sessions/bad/messages", []byte("{\"messages\":[{\"role\":\"user\",\"content\":\"\xff\xfe\"}]}"), 400},
		{"unknown fields only: no messages", "POST", "/v1/sessions/bad/messages", `{"mesages":[{"role":"user","content":"x"}]}`, 400},
		{"negative keep_recent", "POST", "/v1/sessions/bad/messages", `{"keep_recent":-1,"messages":[{"role":"user","content":"x"}]}`, 400},
		{"negative token budget", "GET", "/v1/sessions/bad/context?token_budget=-5", nil, 400},
		{"negative recall limit", "POST", "/v1/recall", `{"query":"hello there","limit":-1}`, 400},
		{"recall query too long", "POST", "/v1/recall", map[string]any{"query": strings.Repeat("q", 4001)}, 413},
		{"commit wrong type", "POST", "/v1/sessions/bad/commit", `{"wait":"yes"}`, 400},
		{"store empty text", "POST", "/v1/memories", `{"text":"   "}`, 400},
		{"forget without query", "POST", "/v1/memories/forget", `{}`, 400},
		{"bad since", "GET", "/v1/memories?since=yesterday", nil, 400},
		{"bad scope", "GET", "/v1/memories?scope=archive", nil, 400},
		{"trends days negative", "GET", "/v1/stats/trends?days=-1", nil, 403},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, b, _ := c.do(tc.method, tc.path, tc.body)
			if code != tc.want {
				t.Fatalf("= %d %s, want %d", code, b, tc.want)
			}
			var eb struct {
				Error struct{ Code, Message, RequestID string } `json:"error"`
			}
			if json.Unmarshal(b, &eb) != nil || eb.Error.Code == "" || eb.Error.Message == "" {
				t.Fatalf("not an error body: %s", b)
			}
		})
	}
	// Nothing was stored, and the service still works.
	if n, err := env.Store.OverviewStats(context.Background(), "acme"); err != nil || n.Messages != 0 || n.Sessions != 0 {
		t.Fatalf("bad input stored something: %+v %v", n, err)
	}
	postTurn(c, "good", "I work as a carpenter in Oslo.")
}

// TestTenantIsolationRandomised: many accounts and users try to read, recall, expand, forget
// and erase each other's data over HTTP (404, nothing leaks, nothing deleted), and a turn on
// one account's subject naming another account is dead-lettered, not stored.
func TestTenantIsolationRandomised(t *testing.T) {
	env, base := startEmbedded(t, t.TempDir())
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 7))
	type tenant struct {
		c       *httpClient
		account string
		user    string
		session string
		secret  string
		archive string
		memory  string
	}
	var tenants []*tenant
	for a := range 3 {
		for u := range 2 {
			account, user := fmt.Sprintf("acct%d", a), fmt.Sprintf("user%d", u)
			tn := &tenant{account: account, user: user, session: fmt.Sprintf("sess-%d-%d", a, u),
				secret: fmt.Sprintf("secret-%d-%d-%d", a, u, rng.IntN(1e9))}
			tn.c = newClient(t, env, base, account, user, store.RoleUser)
			postTurn(tn.c, tn.session, "My code word is "+tn.secret+" and I live in Lisbon.", "Noted.")
			tenants = append(tenants, tn)
		}
	}
	var wg sync.WaitGroup
	for _, tn := range tenants {
		wg.Go(func() {
			var res contract.CommitResult
			tn.c.must(200, "POST", "/v1/sessions/"+tn.session+"/commit", map[string]any{"keep_recent": 0}, &res)
			tn.archive = res.ArchiveID
		})
	}
	wg.Wait()
	for _, tn := range tenants {
		var list contract.MemoriesListResponse
		tn.c.must(200, "GET", "/v1/memories", nil, &list)
		if len(list.Items) > 0 {
			tn.memory = list.Items[0].ID
		}
		if tn.archive == "" {
			t.Fatalf("%s/%s: no archive", tn.account, tn.user)
		}
	}
	for range 60 {
		thief, victim := tenants[rng.IntN(len(tenants))], tenants[rng.IntN(len(tenants))]
		if thief == victim {
			continue
		}
		checks := []struct {
			method, path string
			body         any
		}{
			{"GET", "/v1/sessions/" + victim.session, nil},
			{"GET", "/v1/archives/" + victim.archive, nil},
			{"GET", "/v1/sessions/" + victim.session + "/archives/search?q=" + victim.secret, nil},
			{"DELETE", "/v1/sessions/" + victim.session, nil},
		}
		if victim.memory != "" {
			checks = append(checks, struct {
				method, path string
				body         any
			}{"GET", "/v1/memories/" + victim.memory, nil}, struct {
				method, path string
				body         any
			}{"DELETE", "/v1/memories/" + victim.memory, nil})
		}
		ch := checks[rng.IntN(len(checks))]
		code, b, _ := thief.c.do(ch.method, ch.path, ch.body)
		if code != 404 || strings.Contains(string(b), victim.secret) {
			t.Fatalf("%s/%s %s %s = %d %s, want 404 and no leak", thief.account, thief.user, ch.method, ch.path, code, b)
		}
		for _, q := range []string{"/v1/recall", "/v1/memories/forget"} {
			code, b, _ = thief.c.do("POST", q, map[string]any{"query": "What is my code word " + victim.secret + "?"})
			if code != 200 || strings.Contains(string(b), victim.secret) {
				t.Fatalf("%s/%s %s = %d %s leaks %s", thief.account, thief.user, q, code, b, victim.secret)
			}
		}
	}
	// Every victim still has its own data.
	for _, tn := range tenants {
		tn.c.must(200, "GET", "/v1/sessions/"+tn.session, nil, nil)
		b := tn.c.must(200, "GET", "/v1/archives/"+tn.archive, nil, nil)
		if !strings.Contains(string(b), tn.secret) {
			t.Fatalf("%s lost its archive", tn.account)
		}
	}

	// Over the bus: a subject of acct0 with a body naming acct1 is dead-lettered.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ev := turnEvent("acct1", "user0", "smuggled", "I am smuggled into another account.")
	if _, err := bus.PublishJSON(ctx, env.JS, env.Names.Turns("acct0", "smuggled"), ev.EventID, ev); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 20*time.Second, 50*time.Millisecond, func() error {
		dl, err := bus.ListDLQ(ctx, env.JS, env.Names, "", 100)
		if err != nil {
			t.Fatal(err)
		}
		if len(dl) == 0 {
			return errors.New("the mismatched turn is not dead-lettered")
		}
		return nil
	})
	for _, acct := range []string{"acct0", "acct1"} {
		if _, err := env.Store.GetSession(ctx, acct, "smuggled"); err == nil {
			t.Fatalf("the mismatched turn was stored under %s", acct)
		}
	}
	// An RPC on one account's subject naming another's data finds nothing.
	var other contract.ArchiveExpandResponse
	err := bus.Call(ctx, env.NC, env.Names.RPC("acct0", "archive.expand"), contract.ArchiveExpandRequest{V: 1, UserID: "user0", ArchiveID: tenants[2].archive}, &other)
	if err == nil {
		t.Fatalf("archive.expand across accounts answered %+v", other)
	}
}

// TestEraseDuringCommit erases a user while a synchronous commit of theirs is in flight, and
// proves nothing of that user can be recalled, listed or replayed afterwards.
func TestEraseDuringCommit(t *testing.T) {
	env, base := startEmbedded(t, t.TempDir())
	dana := newClient(t, env, base, "acme", "dana", store.RoleUser)
	admin := newClient(t, env, base, "acme", "", store.RoleAdmin)
	postTurn(dana, "d-1", "My name is Dana and I work as a pediatric nurse in Porto.", "Nice to meet you.")
	var first contract.CommitResult
	dana.must(200, "POST", "/v1/sessions/d-1/commit", map[string]any{"keep_recent": 0}, &first)
	postTurn(dana, "d-2", "I really love green tea with jasmine every evening.", "Lovely.")

	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _, _ = dana.do("POST", "/v1/sessions/d-2/commit", map[string]any{"keep_recent": 0, "timeout_ms": 15000})
	}()
	time.Sleep(time.Duration(rand.IntN(40)) * time.Millisecond) // the scenario: the erase lands anywhere in the commit
	var er contract.EraseResult
	admin.must(200, "DELETE", "/v1/users/dana", nil, &er)
	<-done
	// Erase again once the commit answered: whatever it raced past is swept too.
	admin.must(200, "DELETE", "/v1/users/dana", nil, &er)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// Replay the user's turn: ingest drops it for the tombstone.
	ev := turnEvent("acme", "dana", "d-1", "My name is Dana and I work as a pediatric nurse in Porto.")
	ev.EventID = "replay-" + ev.EventID
	if _, err := bus.PublishJSON(ctx, env.JS, env.Names.Turns("acme", "d-1"), ev.EventID, ev); err != nil {
		t.Fatal(err)
	}
	// TURNS is a work queue: once it is empty, ingest has handled (and dropped) the replay.
	turns, err := env.JS.Stream(ctx, env.Names.Stream(bus.StreamTurns))
	if err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 20*time.Second, 50*time.Millisecond, func() error {
		info, err := turns.Info(ctx)
		if err != nil {
			return err
		}
		if info.State.Msgs != 0 {
			return fmt.Errorf("%d turns not yet handled", info.State.Msgs)
		}
		return nil
	})
	for _, q := range []string{"Where does Dana work?", "What does Dana drink in the evening?"} {
		var rec contract.RecallResponse
		dana.must(200, "POST", "/v1/recall", map[string]any{"query": q, "scopes": []string{"user", "agent", "archive"}}, &rec)
		if len(rec.Items) != 0 {
			t.Fatalf("recall %q after erasure = %+v", q, rec.Items)
		}
	}
	var list contract.MemoriesListResponse
	dana.must(200, "GET", "/v1/memories", nil, &list)
	if len(list.Items) != 0 {
		t.Fatalf("memories after erasure = %+v", list.Items)
	}
	for _, s := range []string{"d-1", "d-2"} {
		dana.must(404, "GET", "/v1/sessions/"+s, nil, nil)
		if msgs, err := env.Store.History(ctx, "acme", s, false); err != nil || len(msgs) != 0 {
			t.Fatalf("history of %s after erasure: %d messages, %v", s, len(msgs), err)
		}
	}
	dana.must(404, "GET", "/v1/archives/"+first.ArchiveID, nil, nil)
	dl, err := bus.ListDLQ(ctx, env.JS, env.Names, "", 100)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dl {
		if strings.Contains(d.Subject, ".acme.d-") {
			t.Fatalf("a dead letter of the erased user remains: %s", d.Subject)
		}
	}
}
