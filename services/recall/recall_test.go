package recall

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/membus/membus/pkg/bus"
	"github.com/membus/membus/pkg/contract"
	"github.com/membus/membus/pkg/embed"
	"github.com/membus/membus/pkg/memory"
	"github.com/membus/membus/pkg/metrics"
	"github.com/membus/membus/pkg/store"
	"github.com/membus/membus/pkg/testenv"
	"github.com/membus/membus/pkg/tokens"
	"github.com/membus/membus/pkg/vector"
)

// brokenVectors is a vector store whose Search fails (the vector store is down).
type brokenVectors struct{ vector.Store }

func (brokenVectors) Search(context.Context, vector.Filter, []float32, string, int) ([]vector.Hit, error) {
	return nil, errors.New("connection refused")
}

type env struct {
	t     *testing.T
	ctx   context.Context
	names bus.Names
	st    *store.Store
	emb   embed.Embedder
	vec   vector.Store
	svc   *Service
	n     int
}

func newEnv(t *testing.T, broken bool) *env {
	t.Helper()
	ctx := context.Background()
	_, nc := testenv.NATS(t)
	names, err := bus.NewNames("")
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.OpenSQLite(ctx, filepath.Join(t.TempDir(), "membus.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	emb := embed.NewHash()
	lv, err := vector.OpenLocal(t.TempDir(), emb.Model(), emb.Dim())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lv.Close() })
	var vs vector.Store = lv
	if broken {
		vs = brokenVectors{lv}
	}
	svc, err := New(Defaults(), Deps{NC: nc, Names: names, Store: st, Embedder: emb, Vectors: vs, Metrics: metrics.New("recall", "test")})
	if err != nil {
		t.Fatal(err)
	}
	return &env{t: t, ctx: ctx, names: names, st: st, emb: emb, vec: lv, svc: svc}
}

// fact is one memory to seed.
type fact struct {
	scope, agent, category, text string
}

// seed writes memories the way extract does (one archived message per memory as its source,
// the row in SQL, then the vector) and returns their ids in order.
func (e *env) seed(account, user string, facts ...fact) []string {
	e.t.Helper()
	var ids []string
	for _, f := range facts {
		e.n++
		session := fmt.Sprintf("seed-%d", e.n)
		msgID := fmt.Sprintf("msg-%d", e.n)
		turn := store.Turn{AccountID: account, UserID: user, AgentID: "main", SessionID: session, EventID: "ev-" + msgID,
			Messages: []store.Message{{MessageID: msgID, Role: "user", Content: f.text, Parts: json.RawMessage(`[]`), Tokens: 10, CreatedAt: time.Now()}}}
		if _, err := e.st.ApplyTurns(e.ctx, nil, []store.Turn{turn}); err != nil {
			e.t.Fatal(err)
		}
		epoch, err := e.st.AcquireEpoch(e.ctx, account, session)
		if err != nil {
			e.t.Fatal(err)
		}
		a := store.Archive{ID: "arch-" + session, AccountID: account, SessionID: session, UserID: user, AgentID: "main", FromSeq: 1, ToSeq: 1,
			Kind: contract.CommitSync, State: store.StateArchived, RequestID: "r-" + session}
		if err := e.st.CreateArchive(e.ctx, epoch, a, nil); err != nil {
			e.t.Fatal(err)
		}
		scope, cat := f.scope, f.category
		if scope == "" {
			scope = contract.ScopeUser
		}
		if cat == "" {
			cat = memory.Fact
		}
		vecs, err := e.emb.Embed(e.ctx, []string{f.text})
		if err != nil {
			e.t.Fatal(err)
		}
		c := memory.Candidate{Scope: scope, Category: cat, Subject: user, Value: f.text, Text: f.text, Polarity: 1}
		m := store.Memory{ID: memory.ID(account, user, f.agent, c), AccountID: account, UserID: user, AgentID: f.agent, Scope: scope,
			Category: cat, Subject: user, Value: f.text, Text: f.text, Abstract: memory.Abstract(f.text), Polarity: 1, Importance: 0.5,
			Sources: []store.Source{{SessionID: session, MessageID: msgID}}, ValidFrom: time.Now(), ContentHash: memory.ContentHash(f.text),
			Embedding: vecs[0], EmbedModel: e.emb.Model()}
		if err := e.st.SaveMemories(e.ctx, epoch, a, []store.Memory{m}, nil, nil); err != nil {
			e.t.Fatal(err)
		}
		if err := e.vec.Upsert(e.ctx, e.emb.Model(), []vector.Point{{ID: m.ID, AccountID: account, UserID: user, AgentID: f.agent,
			Scope: scope, Kind: contract.KindMemory, Category: cat, Text: f.text, Vector: vecs[0]}}); err != nil {
			e.t.Fatal(err)
		}
		ids = append(ids, m.ID)
	}
	return ids
}

func (e *env) recall(account string, req contract.RecallRequest) contract.RecallResponse {
	e.t.Helper()
	resp, err := e.svc.Recall(e.ctx, account, req)
	if err != nil {
		e.t.Fatalf("recall %q: %v", req.Query, err)
	}
	return resp
}

func zero() *float64 { z := 0.0; return &z }

func TestRecallTenancy(t *testing.T) {
	e := newEnv(t, false)
	texts := []fact{{text: "Alice loves hiking in the Swiss Alps every summer."}, {text: "Alice keeps a sourdough starter named Bubbles."}}
	owner := map[string]string{}
	tenants := []struct{ account, user string }{{"acme", "alice"}, {"acme", "bob"}, {"globex", "alice"}, {"globex", "bob"}}
	for _, tn := range tenants {
		for _, id := range e.seed(tn.account, tn.user, texts...) {
			owner[id] = tn.account + "/" + tn.user
		}
	}
	for _, tn := range tenants {
		t.Run(tn.account+"/"+tn.user, func(t *testing.T) {
			resp := e.recall(tn.account, contract.RecallRequest{UserID: tn.user, Query: "hiking in the Alps sourdough", ScoreThreshold: zero(), Trace: true})
			if len(resp.Items) != 2 {
				t.Fatalf("%d items, want the tenant's 2", len(resp.Items))
			}
			for _, it := range resp.Items {
				if owner[it.ID] != tn.account+"/"+tn.user {
					t.Errorf("item %s belongs to %s", it.ID, owner[it.ID])
				}
			}
			for _, tr := range resp.Trace {
				if owner[tr.ID] != tn.account+"/"+tn.user {
					t.Errorf("trace names %s of %s", tr.ID, owner[tr.ID])
				}
			}
			// Another tenant's id asked for directly is not found either.
			for id, o := range owner {
				if o == tn.account+"/"+tn.user {
					continue
				}
				if _, err := e.svc.GetMemory(e.ctx, tn.account, contract.MemoryGetRequest{UserID: tn.user, MemoryID: id}); !errors.Is(err, store.ErrNotFound) {
					t.Fatalf("get of %s's memory: %v, want not found", o, err)
				}
			}
		})
	}
}

func TestRecallSQLIsTheTruth(t *testing.T) {
	e := newEnv(t, false)
	ids := e.seed("acme", "alice",
		fact{text: "Alice lives in Boston near the harbour."},
		fact{text: "Alice lives in Denver near the mountains."},
		fact{text: "Alice lives in a flat with a view of the river."})
	boston, denver, deleted := ids[0], ids[1], ids[2]
	db := e.st.DB()
	if _, err := db.ExecContext(e.ctx, "UPDATE memories SET valid_to_us = ?, superseded_by = ? WHERE id = ?", time.Now().UnixMicro(), denver, boston); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(e.ctx, "DELETE FROM memories WHERE id = ?", deleted); err != nil {
		t.Fatal(err)
	}
	resp := e.recall("acme", contract.RecallRequest{UserID: "alice", Query: "where does Alice live", ScoreThreshold: zero(), Trace: true})
	if len(resp.Items) != 1 || resp.Items[0].ID != denver {
		t.Fatalf("items %+v, want only the active denver memory", resp.Items)
	}
	dropped := map[string]string{}
	for _, tr := range resp.Trace {
		if !tr.Kept {
			dropped[tr.ID] = tr.Dropped
		}
	}
	for _, id := range []string{boston, deleted} {
		if !strings.Contains(dropped[id], "inactive") {
			t.Errorf("trace for %s: %q, want it dropped as inactive in SQL", id, dropped[id])
		}
	}
}

func TestRecallScoring(t *testing.T) {
	e := newEnv(t, false)
	e.seed("acme", "alice",
		fact{text: "Alice plays the cello in a string quartet on Tuesdays."},
		fact{text: "Alice's quartet rehearses Brahms this season."},
		fact{text: "Alice drinks oolong tea in the morning."},
		fact{text: "Alice repairs vintage bicycles on weekends."})
	resp := e.recall("acme", contract.RecallRequest{UserID: "alice", Query: "cello quartet rehearsal", ScoreThreshold: zero(), Trace: true})
	if len(resp.Items) == 0 {
		t.Fatal("no items")
	}
	maxKW := 0.0
	for _, it := range resp.Items {
		p := it.Parts
		if p == nil {
			t.Fatalf("item %s without score parts", it.ID)
		}
		if p.Dense < 0 || p.Dense > 1 || p.Keyword < 0 || p.Keyword > 1 {
			t.Errorf("parts out of [0,1]: %+v", p)
		}
		if math.Abs(p.Fused-(0.7*p.Dense+0.3*p.Keyword)) > 1e-9 {
			t.Errorf("fused %v ≠ 0.7·%v + 0.3·%v", p.Fused, p.Dense, p.Keyword)
		}
		if math.Abs(it.Score-(p.Fused+p.Boost)) > 1e-9 {
			t.Errorf("score %v ≠ fused %v + boost %v", it.Score, p.Fused, p.Boost)
		}
		maxKW = max(maxKW, p.Keyword)
	}
	if maxKW != 1 {
		t.Errorf("best keyword part %v, want 1 (BM25 divided by the best of the candidates)", maxKW)
	}
	for i := 1; i < len(resp.Items); i++ {
		if resp.Items[i].Score > resp.Items[i-1].Score {
			t.Fatalf("items not in score order: %v then %v", resp.Items[i-1].Score, resp.Items[i].Score)
		}
	}
	if !strings.HasPrefix(resp.Block, "<relevant-memories>\n") || !strings.HasSuffix(resp.Block, "</relevant-memories>") || !strings.Contains(resp.Block, "cello") {
		t.Fatalf("block %q", resp.Block)
	}

	// Threshold: a bar above every score drops all, and the trace says why.
	high := 5.0
	resp = e.recall("acme", contract.RecallRequest{UserID: "alice", Query: "cello quartet rehearsal", ScoreThreshold: &high, Trace: true})
	if len(resp.Items) != 0 || resp.Block != "" {
		t.Fatalf("items above a threshold of 5: %+v", resp.Items)
	}
	if len(resp.Trace) == 0 || !strings.Contains(resp.Trace[0].Dropped, "threshold") {
		t.Fatalf("trace %+v, want drops below threshold", resp.Trace)
	}
	// The default threshold (0.15) drops a candidate that shares nothing with the query.
	resp = e.recall("acme", contract.RecallRequest{UserID: "alice", Query: "cello quartet rehearsal", Trace: true})
	for _, tr := range resp.Trace {
		if tr.Score < 0.15 && tr.Kept {
			t.Errorf("kept %s with score %v under the default threshold", tr.ID, tr.Score)
		}
	}
	// Limit.
	resp = e.recall("acme", contract.RecallRequest{UserID: "alice", Query: "Alice cello tea bicycles", ScoreThreshold: zero(), Limit: 2})
	if len(resp.Items) != 2 {
		t.Fatalf("%d items with limit 2", len(resp.Items))
	}
}

func TestRecallQueryHandling(t *testing.T) {
	e := newEnv(t, false)
	e.seed("acme", "alice", fact{text: "Alice's favourite mountain is the Matterhorn."}, fact{text: "Alice's cat is called Pixel."})
	cases := []struct {
		name, query string
		wantItems   bool
	}{
		{"short", "cat?", false},
		{"blank", "    ", false},
		{"only an injected block", "<relevant-memories>\n- [fact] Alice's cat is called Pixel.\n</relevant-memories>\nhi", false},
		{"own context block", "<membus-context>Alice's cat is called Pixel</membus-context> ok", false},
		{"real query", "what is the cat called", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp := e.recall("acme", contract.RecallRequest{UserID: "alice", Query: c.query, ScoreThreshold: zero()})
			if got := len(resp.Items) > 0; got != c.wantItems {
				t.Fatalf("query %q: %d items, want items=%v", c.query, len(resp.Items), c.wantItems)
			}
		})
	}
	// The stripped block does not steer the search: only the real question does.
	resp := e.recall("acme", contract.RecallRequest{UserID: "alice", Limit: 1, ScoreThreshold: zero(),
		Query: "<relevant-memories>cat called Pixel cat Pixel</relevant-memories> which mountain is the favourite"})
	if len(resp.Items) != 1 || !strings.Contains(resp.Items[0].Text, "Matterhorn") {
		t.Fatalf("items %+v, want the mountain", resp.Items)
	}
	if _, err := e.svc.Recall(e.ctx, "acme", contract.RecallRequest{Query: "which mountain"}); !errors.Is(err, errBadRequest) {
		t.Fatalf("recall without user_id: %v, want bad request", err)
	}
}

func TestRecallBudget(t *testing.T) {
	e := newEnv(t, false)
	var user, agent []fact
	for i := 0; i < 5; i++ {
		user = append(user, fact{text: fmt.Sprintf("Project Zephyr note %d: %s", i, strings.Repeat("zephyr rollout detail ", 8))})
	}
	e.seed("acme", "alice", user...)
	long := "Project Zephyr runbook: " + strings.Repeat("zephyr step ", 200) // ~2400 chars, cut at a word
	e.seed("acme", "alice", fact{text: long})
	noSpace := "Zephyr " + strings.Repeat("x", 1500) // no break after the first word: a hard cut
	e.seed("acme", "alice", fact{text: noSpace})

	resp := e.recall("acme", contract.RecallRequest{UserID: "alice", Query: "zephyr rollout", ScoreThreshold: zero(), Limit: 20, MaxInjectedChars: 100000})
	if len(resp.Items) != 7 {
		t.Fatalf("%d items, want 7", len(resp.Items))
	}
	for _, it := range resp.Items {
		if n := utf8.RuneCountInString(it.Text); n > 1000 {
			t.Errorf("item of %d chars, want at most 1000", n)
		}
	}

	for _, budget := range []int{400, 1000, 2500} {
		resp = e.recall("acme", contract.RecallRequest{UserID: "alice", Query: "zephyr rollout", ScoreThreshold: zero(), Limit: 20, MaxInjectedChars: budget})
		used := 0
		for _, it := range resp.Items {
			used += len(it.Text)
		}
		if used > budget || len(resp.Items) == 0 {
			t.Errorf("budget %d: %d items using %d chars", budget, len(resp.Items), used)
		}
	}

	// With agent-scope candidates the user scope gets at most 60%; the rest is the agent's.
	for i := 0; i < 4; i++ {
		agent = append(agent, fact{scope: contract.ScopeAgent, agent: "main", category: memory.Decision,
			text: fmt.Sprintf("Agent decided zephyr rollout step %d: %s", i, strings.Repeat("zephyr rollout agent ", 8))})
	}
	e.seed("acme", "alice", agent...)
	const budget = 1000
	resp = e.recall("acme", contract.RecallRequest{UserID: "alice", AgentID: "main", Query: "zephyr rollout", ScoreThreshold: zero(), Limit: 20, MaxInjectedChars: budget})
	usedUser, usedAgent := 0, 0
	for _, it := range resp.Items {
		if it.Scope == contract.ScopeUser {
			usedUser += len(it.Text)
		} else {
			usedAgent += len(it.Text)
		}
	}
	if usedUser > budget*6/10 || usedAgent == 0 || usedUser == 0 || usedUser+usedAgent > budget {
		t.Fatalf("user %d + agent %d chars of %d, want user ≤ 60%% and both present", usedUser, usedAgent, budget)
	}
}

func TestRecallUnusedAgentShareFlowsBack(t *testing.T) {
	e := newEnv(t, false)
	var user []fact
	for i := 0; i < 6; i++ {
		user = append(user, fact{text: fmt.Sprintf("Orchid care tip %d: %s", i, strings.Repeat("orchid watering light ", 6))})
	}
	e.seed("acme", "alice", user...)
	e.seed("acme", "alice", fact{scope: contract.ScopeAgent, agent: "main", category: memory.Decision, text: "Agent decided orchid reminders weekly."})
	const budget = 1000
	resp := e.recall("acme", contract.RecallRequest{UserID: "alice", AgentID: "main", Query: "orchid watering", ScoreThreshold: zero(), Limit: 20, MaxInjectedChars: budget})
	usedUser, usedAgent := 0, 0
	for _, it := range resp.Items {
		if it.Scope == contract.ScopeUser {
			usedUser += len(it.Text)
		} else {
			usedAgent += len(it.Text)
		}
	}
	// The agent needs far less than its 40%: what it leaves flows back to the user scope.
	if usedAgent == 0 || usedUser <= budget*6/10 || usedUser+usedAgent > budget {
		t.Fatalf("user %d + agent %d of %d chars: the agent's unused share did not flow back", usedUser, usedAgent, budget)
	}
}

func TestRecallDegraded(t *testing.T) {
	e := newEnv(t, true)
	e.seed("acme", "alice", fact{text: "Alice likes rowing on the lake."}, fact{text: "Alice owns a red bicycle."})
	e.seed("acme", "bob", fact{text: "Bob likes rowing too."})
	resp, err := e.svc.Recall(e.ctx, "acme", contract.RecallRequest{UserID: "alice", Query: "does Alice like rowing"})
	if err != nil {
		t.Fatalf("recall with the vector store down: %v, want no error", err)
	}
	if !resp.Degraded || len(resp.Items) == 0 || !strings.Contains(resp.Items[0].Text, "rowing on the lake") {
		t.Fatalf("resp %+v, want degraded with the keyword match first", resp)
	}
	for _, it := range resp.Items {
		if strings.Contains(it.Text, "Bob") {
			t.Fatalf("bob's memory in alice's degraded answer: %+v", it)
		}
	}
	if p := resp.Items[0].Parts; p.Dense != 0 || p.Keyword != 1 {
		t.Fatalf("parts %+v, want keyword only", p)
	}
	// Nothing matches: degraded and empty, never an error.
	resp, err = e.svc.Recall(e.ctx, "acme", contract.RecallRequest{UserID: "alice", Query: "zeppelins over Zurich"})
	if err != nil || !resp.Degraded || len(resp.Items) != 0 || resp.Items == nil {
		t.Fatalf("resp %+v, err %v: want degraded with empty (non-nil) items", resp, err)
	}
}

// hangingVectors is a vector store whose Search hangs until its context ends.
type hangingVectors struct{ vector.Store }

func (hangingVectors) Search(ctx context.Context, _ vector.Filter, _ []float32, _ string, _ int) ([]vector.Hit, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

func TestRecallDegradedWithinTimeout(t *testing.T) {
	e := newEnv(t, false)
	e.seed("acme", "alice", fact{text: "Alice likes rowing on the lake."})
	cfg := Defaults()
	cfg.SearchTimeout = 50 * time.Millisecond
	svc, err := New(cfg, Deps{NC: e.svc.d.NC, Names: e.names, Store: e.st, Embedder: e.emb, Vectors: hangingVectors{e.vec}, Metrics: e.svc.d.Metrics})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := svc.Recall(e.ctx, "acme", contract.RecallRequest{UserID: "alice", Query: "rowing on the lake"})
	if err != nil || !resp.Degraded || len(resp.Items) != 1 {
		t.Fatalf("resp %+v, err %v: want a degraded keyword answer after the search timeout", resp, err)
	}
}

// say stores messages (role, tokens) in a session.
func (e *env) say(account, user, session string, msgs ...store.Message) {
	e.t.Helper()
	for i := range msgs {
		e.n++
		msgs[i].MessageID = fmt.Sprintf("m-%d", e.n)
		msgs[i].Parts = json.RawMessage(`[]`)
		msgs[i].CreatedAt = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(e.n) * time.Second)
	}
	turn := store.Turn{AccountID: account, UserID: user, AgentID: "main", SessionID: session, EventID: fmt.Sprintf("ev-%d", e.n), Messages: msgs}
	if _, err := e.st.ApplyTurns(e.ctx, nil, []store.Turn{turn}); err != nil {
		e.t.Fatal(err)
	}
}

func msg(role, content string, tok int) store.Message {
	return store.Message{Role: role, Content: content, Tokens: tok}
}

func TestContextBudgetSplit(t *testing.T) {
	cases := []struct {
		budget, msgTokens, msgs int
	}{
		{budget: 2000, msgTokens: 96, msgs: 40},
		{budget: 50000, msgTokens: 996, msgs: 40},  // reserved 20000 (> 15%)
		{budget: 100000, msgTokens: 996, msgs: 90}, // archive capped at 8000
	}
	for _, c := range cases {
		t.Run(fmt.Sprint(c.budget), func(t *testing.T) {
			e := newEnv(t, false)
			var archived []store.Message
			for i := 0; i < 4; i++ {
				archived = append(archived, msg(contract.RoleUser, fmt.Sprintf("old question %d about the garden", i), 10), msg(contract.RoleAssistant, "old answer", 10))
			}
			e.say("acme", "alice", "s1", archived...)
			epoch, err := e.st.AcquireEpoch(e.ctx, "acme", "s1")
			if err != nil {
				t.Fatal(err)
			}
			a := store.Archive{ID: "arch-1", AccountID: "acme", SessionID: "s1", UserID: "alice", FromSeq: 1, ToSeq: 8, Kind: contract.CommitSync, State: store.StateArchived}
			if err := e.st.CreateArchive(e.ctx, epoch, a, nil); err != nil {
				t.Fatal(err)
			}
			overview := "## Session Title\nPlanning the garden\n## Key Facts & Decisions\n- User: tomatoes go in the south bed"
			if err := e.st.SetOverview(e.ctx, epoch, a, "Planning the garden", overview, nil); err != nil {
				t.Fatal(err)
			}
			var active []store.Message
			for i := 0; i < c.msgs; i++ {
				role := contract.RoleUser
				if i%2 == 1 {
					role = contract.RoleAssistant
				}
				active = append(active, msg(role, fmt.Sprintf("message %d", i), c.msgTokens))
			}
			e.say("acme", "alice", "s1", active...)

			resp, err := e.svc.Context(e.ctx, "acme", contract.ContextRequest{UserID: "alice", SessionID: "s1", TokenBudget: c.budget})
			if err != nil {
				t.Fatal(err)
			}
			reserved := c.budget * 15 / 100
			if c.budget >= 40000 && reserved < 20000 {
				reserved = 20000
			}
			rest := c.budget - reserved
			archiveBudget := min(rest*15/100, 8000)
			sessionBudget := rest - archiveBudget

			if resp.Summary != "[Session History Summary]\n"+overview {
				t.Fatalf("summary %q", resp.Summary)
			}
			if len(resp.ArchiveIndex) != 1 || resp.ArchiveIndex[0].ArchiveID != "arch-1" || resp.ArchiveIndex[0].Abstract != "Planning the garden" {
				t.Fatalf("archive index %+v", resp.ArchiveIndex)
			}
			if resp.SystemPromptAddition == "" {
				t.Fatal("no system prompt addition with an archive")
			}
			// The newest messages that fit the session's share, after the summary.
			fit := (sessionBudget - tokens.Count(resp.Summary)) / (c.msgTokens + 4)
			if fit > c.msgs {
				t.Fatalf("test case too small: %d messages fit", fit)
			}
			seqs := []int64{}
			for _, m := range resp.Messages {
				seqs = append(seqs, m.Seq)
			}
			last := int64(8 + c.msgs)
			if resp.Messages[len(resp.Messages)-1].Seq != last {
				t.Fatalf("last message seq %d, want the newest %d", resp.Messages[len(resp.Messages)-1].Seq, last)
			}
			// Picked: the newest `fit` messages; repair drops a leading assistant reply.
			first := last - int64(fit) + 1
			if resp.Messages[0].Role == contract.RoleUser && resp.Messages[0].Seq != first && resp.Messages[0].Seq != first+1 {
				t.Fatalf("window starts at seq %d, want %d (or %d after repair); seqs %v", resp.Messages[0].Seq, first, first+1, seqs)
			}
			if resp.EstimatedTokens > rest {
				t.Fatalf("estimated %d tokens over the %d left after the reserve", resp.EstimatedTokens, rest)
			}
		})
	}
}

func TestContextRepairAndTenancy(t *testing.T) {
	e := newEnv(t, false)
	e.say("acme", "alice", "s1",
		msg(contract.RoleAssistant, "welcome back", 5),
		msg(contract.RoleTool, "orphan tool output", 5),
		msg(contract.RoleUser, "first part", 5),
		msg(contract.RoleUser, "second part", 5),
		msg(contract.RoleAssistant, "reply", 5),
		msg(contract.RoleUser, "thanks", 5))
	resp, err := e.svc.Context(e.ctx, "acme", contract.ContextRequest{UserID: "alice", SessionID: "s1", TokenBudget: 10000})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range resp.Messages {
		got = append(got, m.Role+":"+m.Content)
	}
	want := []string{"user:first part\nsecond part", "assistant:reply", "user:thanks"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("messages %q, want %q", got, want)
	}
	if resp.Summary != "" || len(resp.ArchiveIndex) != 0 || resp.SystemPromptAddition != "" {
		t.Fatalf("no archive yet, got summary %q index %v", resp.Summary, resp.ArchiveIndex)
	}

	for _, c := range []struct{ account, user, session string }{
		{"acme", "mallory", "s1"}, // another user's session
		{"globex", "alice", "s1"}, // another account
		{"acme", "alice", "nope"}, // missing
	} {
		if _, err := e.svc.Context(e.ctx, c.account, contract.ContextRequest{UserID: c.user, SessionID: c.session, TokenBudget: 1000}); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%+v: %v, want store.ErrNotFound", c, err)
		}
	}
	if _, err := e.svc.Context(e.ctx, "acme", contract.ContextRequest{UserID: "alice", SessionID: "s1"}); !errors.Is(err, errBadRequest) {
		t.Errorf("zero budget: %v, want bad request", err)
	}
}
