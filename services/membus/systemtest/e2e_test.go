package systemtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/membus/membus/pkg/bus"
	"github.com/membus/membus/pkg/config"
	"github.com/membus/membus/pkg/contract"
	"github.com/membus/membus/pkg/store"
	"github.com/membus/membus/pkg/testenv"
	"github.com/membus/membus/services/membus/internal/app"
	"github.com/membus/membus/services/membus/internal/harness"
)

// startEmbedded runs every service with the embedded servers on dataDir (a test that restarts
// passes the same dir again) and returns the environment and the HTTP base URL.
func startEmbedded(t *testing.T, dataDir string) (*app.Env, string) {
	t.Helper()
	cfg := config.Defaults()
	cfg.NATSSync = "interval" // tests need speed, not power-loss durability
	return startSystem(t, dataDir, cfg)
}

// startSystem runs every service on cfg through the harness, as `membus up` does (free ports,
// logs discarded), stops it when the test ends and returns the environment and the HTTP base
// URL once /healthz answers.
func startSystem(t *testing.T, dataDir string, cfg config.Config) (*app.Env, string) {
	t.Helper()
	env, stop, _, err := harness.StartIn(context.Background(), dataDir, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("services: %v", err)
		}
	})
	base := "http://" + env.Config.HTTPAddr
	waitHTTP(t, base+"/healthz")
	return env, base
}

// commitBoston publishes the walking skeleton's turn (acme, u1, session s-1) and commits it
// synchronously over the RPC; the commit must complete with profile memories.
func commitBoston(ctx context.Context, t *testing.T, env *app.Env) contract.CommitResult {
	t.Helper()
	ev := turnEvent("acme", "u1", "s-1",
		"I live in Boston and I have a dog named Max.",
		"Nice! Boston is a great city.",
		"I really love black coffee in the morning.")
	if _, err := bus.PublishJSON(ctx, env.JS, env.Names.Turns("acme", "s-1"), ev.EventID, ev); err != nil {
		t.Fatal(err)
	}
	var res contract.CommitResult
	if err := bus.Call(ctx, env.NC, env.Names.RPC("acme", "commit"), contract.CommitRPCRequest{V: 1, RequestID: "r1", UserID: "u1", SessionID: "s-1", Kind: "sync", Wait: true}, &res); err != nil {
		t.Fatal(err)
	}
	if res.Status != contract.StatusCompleted || res.ArchiveID == "" || res.Memories["profile"] == 0 {
		t.Fatalf("commit result = %+v, want completed with profile memories", res)
	}
	return res
}

// recallBoston asks recall over the RPC where u1 lives: the Boston memory comes first, with its
// source message.
func recallBoston(ctx context.Context, t *testing.T, env *app.Env) contract.RecallResponse {
	t.Helper()
	var rec contract.RecallResponse
	if err := bus.Call(ctx, env.NC, env.Names.RPC("acme", "recall"), contract.RecallRequest{V: 1, UserID: "u1", Query: "Where does Caroline live?"}, &rec); err != nil {
		t.Fatal(err)
	}
	if len(rec.Items) == 0 || !strings.Contains(rec.Items[0].Text, "Boston") || len(rec.Items[0].Sources) == 0 || rec.Items[0].Sources[0] != "s-1-m0" {
		t.Fatalf("recall items = %+v, want the Boston memory first with source s-1-m0", rec.Items)
	}
	return rec
}

func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func waitHTTP(t *testing.T, url string) {
	testenv.Eventually(t, 10*time.Second, 20*time.Millisecond, func() error {
		r, err := http.Get(url)
		if err != nil {
			return err
		}
		r.Body.Close()
		if r.StatusCode != 200 {
			return fmt.Errorf("%s answered %d", url, r.StatusCode)
		}
		return nil
	})
}

func turnEvent(account, user, session string, texts ...string) contract.TurnEvent {
	at := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	ev := contract.TurnEvent{V: 1, AccountID: account, UserID: user, AgentID: "main", SessionID: session, Source: "test", SentAt: at}
	var ids []string
	for i, tx := range texts {
		id := fmt.Sprintf("%s-m%d", session, i)
		ids = append(ids, id)
		role := contract.RoleUser
		if i%2 == 1 {
			role = contract.RoleAssistant
		}
		ev.Messages = append(ev.Messages, contract.Message{MessageID: id, Position: i, Role: role, Name: "Caroline",
			Parts: []contract.Part{{Type: contract.PartText, Text: tx}}, CreatedAt: at.Add(time.Duration(i) * time.Second)})
	}
	ev.EventID = bus.MsgID(append([]string{account, session}, ids...)...)
	return ev
}

// TestWalkingSkeleton drives the whole path through the bus: a TurnEvent published on NATS is
// stored by ingest, a synchronous commit archives it and extracts memories, and recall (NATS
// RPC and HTTP) returns them with their sources.
func TestWalkingSkeleton(t *testing.T) {
	env, base := startEmbedded(t, t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	res := commitBoston(ctx, t, env)
	if res.Memories["preference"] == 0 {
		t.Fatalf("commit result = %+v, want preference memories too", res)
	}
	// A repeated request id gets the stored result.
	var again contract.CommitResult
	if err := bus.Call(ctx, env.NC, env.Names.RPC("acme", "commit"), contract.CommitRPCRequest{V: 1, RequestID: "r1", UserID: "u1", SessionID: "s-1", Kind: "sync", Wait: true}, &again); err != nil {
		t.Fatal(err)
	}
	if again.ArchiveID != res.ArchiveID {
		t.Fatalf("repeated commit answered %+v, want the stored result %+v", again, res)
	}

	rec := recallBoston(ctx, t, env)
	if !strings.Contains(rec.Block, "<relevant-memories>") {
		t.Fatalf("block = %q", rec.Block)
	}
	// Another tenant asking the same thing gets nothing.
	var other contract.RecallResponse
	if err := bus.Call(ctx, env.NC, env.Names.RPC("other", "recall"), contract.RecallRequest{V: 1, UserID: "u1", Query: "Where does Caroline live?"}, &other); err != nil {
		t.Fatal(err)
	}
	if len(other.Items) != 0 {
		t.Fatalf("account other recalled %+v", other.Items)
	}

	// The same over HTTP with an API key (docs/design.md §11 core routes).
	key, _, err := env.Store.CreateKey(ctx, "acme", "u2", store.RoleUser, "test")
	if err != nil {
		t.Fatal(err)
	}
	do := func(method, path string, body any) (int, []byte) {
		var rd io.Reader
		if body != nil {
			b, _ := json.Marshal(body)
			rd = bytes.NewReader(b)
		}
		req, _ := http.NewRequestWithContext(ctx, method, base+path, rd)
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	code, body := do("POST", "/v1/sessions/web-1/messages", map[string]any{"messages": []map[string]any{
		{"role": "user", "content": "My name is Dana and I work as a pediatric nurse.", "external_id": "d1"},
		{"role": "assistant", "content": "Nice to meet you, Dana."},
	}})
	if code != http.StatusAccepted {
		t.Fatalf("POST messages = %d %s", code, body)
	}
	code, body = do("POST", "/v1/sessions/web-1/commit", map[string]any{"wait": true})
	if code != 200 || !strings.Contains(string(body), `"status":"completed"`) {
		t.Fatalf("POST commit = %d %s", code, body)
	}
	code, body = do("POST", "/v1/recall", map[string]any{"query": "what is Dana's job?"})
	if code != 200 || !strings.Contains(string(body), "nurse") || !strings.Contains(string(body), `"d1"`) {
		t.Fatalf("POST recall = %d %s", code, body)
	}
	code, body = do("GET", "/v1/sessions/web-1", nil)
	if code != 200 || !strings.Contains(string(body), `"message_count":2`) {
		t.Fatalf("GET session = %d %s", code, body)
	}
	// The summarizer folds the archive into the session overview, served by context assembly.
	testenv.Eventually(t, 20*time.Second, 50*time.Millisecond, func() error {
		code, body = do("GET", "/v1/sessions/web-1/context?token_budget=8000", nil)
		if code == 200 && strings.Contains(string(body), "[Session History Summary]") && strings.Contains(string(body), "pediatric nurse") {
			return nil
		}
		return fmt.Errorf("GET context = %d %s, want the session overview", code, body)
	})
	// u2 cannot see u1's session: a foreign id answers 404.
	if code, body = do("GET", "/v1/sessions/s-1", nil); code != http.StatusNotFound {
		t.Fatalf("GET foreign session = %d %s, want 404", code, body)
	}
	code, body = do("GET", "/v1/memories", nil)
	if code != 200 || !strings.Contains(string(body), "nurse") || strings.Contains(string(body), "Boston") {
		t.Fatalf("GET memories = %d %s (must hold u2's memories only)", code, body)
	}
}
