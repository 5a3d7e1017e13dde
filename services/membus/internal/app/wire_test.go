package app

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/membus/membus/pkg/bus"
	"github.com/membus/membus/pkg/config"
	"github.com/membus/membus/pkg/contract"
	"github.com/membus/membus/pkg/embed"
	"github.com/membus/membus/pkg/store"
	"github.com/membus/membus/pkg/testenv"
	"github.com/membus/membus/pkg/vector/qdrant"
	"github.com/membus/membus/pkg/vector/qdrant/qdranttest"
	"github.com/membus/membus/services/extract"
	"github.com/membus/membus/services/gateway"
	"github.com/membus/membus/services/ingest"
	"github.com/membus/membus/services/recall"
	"github.com/membus/membus/services/summarizer"
)

// openTestEnv opens an embedded environment (NATS, SQLite, hash embedder) in a temp dir.
func openTestEnv(t *testing.T) *Env {
	t.Helper()
	cfg := config.Defaults()
	cfg.DataDir = t.TempDir()
	cfg.NATSListen = "127.0.0.1:0"
	cfg.NATSSync = "interval"
	cfg.Embedder = "hash"
	env, err := Open(context.Background(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(env.Close)
	return env
}

func TestWiring(t *testing.T) {
	env := openTestEnv(t)
	all, err := BuildAll(env)
	if err != nil {
		t.Fatalf("BuildAll: %v", err)
	}
	if len(all) != len(Services) {
		t.Fatalf("BuildAll built %d services, want %d", len(all), len(Services))
	}
	for i, want := range []any{&ingest.Service{}, &extract.Service{}, &recall.Service{}, &summarizer.Service{}, &gateway.Service{}} {
		if got, w := fmt.Sprintf("%T", all[i]), fmt.Sprintf("%T", want); got != w {
			t.Errorf("service %d (%s) is %s, want %s", i, Services[i], got, w)
		}
	}
	if _, err := Build(env, "nope"); err == nil || !strings.Contains(err.Error(), "ingest") {
		t.Errorf("Build(unknown) = %v, want an error listing the services", err)
	}
}

func TestProbesByName(t *testing.T) {
	env := openTestEnv(t)
	for _, tc := range []struct {
		name string
		ask  []string
		want []string
	}{
		{"asked order is kept", []string{"nats", "sql"}, []string{"nats", "sql"}},
		{"without Redis there is no redis probe", []string{"sql", "redis", "nats"}, []string{"sql", "nats"}},
		{"unknown names are ignored", []string{"qdrant"}, nil},
		{"the local index is no server of its own: no vectors probe", []string{"vectors", "sql"}, []string{"sql"}},
		{"nor is the hash embedder: no embedder probe", []string{"embedder", "nats"}, []string{"nats"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, p := range env.Probes(tc.ask...) {
				got = append(got, p.Name)
				if err := p.Check(context.Background()); err != nil {
					t.Errorf("probe %s: %v", p.Name, err)
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("Probes(%v) = %v, want %v", tc.ask, got, tc.want)
			}
		})
	}
}

// withFakeQdrant makes env's vector store a Qdrant store on a fake server, which it returns.
func withFakeQdrant(t *testing.T, env *Env) *qdranttest.Server {
	t.Helper()
	srv := qdranttest.Start(t)
	q, err := qdrant.Open(context.Background(), qdrant.Config{URL: srv.URL(), Collection: "membus-test", Model: env.Embedder.Model(),
		Dim: env.Embedder.Dim(), Timeout: 2 * time.Second, DialOptions: srv.DialOptions()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = q.Close() })
	env.Vectors = q
	return srv
}

// TestVectorsProbe: with Qdrant as the vector store the extract runner probes
// it (wire.go), so a commit that fails while Qdrant is down is an outage, redelivered, never
// dead-lettered (docs/design.md §8): the probe passes while the server answers and fails once
// it is down.
func TestVectorsProbe(t *testing.T) {
	env := openTestEnv(t)
	srv := withFakeQdrant(t, env)
	ps := env.Probes("vectors")
	if len(ps) != 1 || ps[0].Name != "vectors" {
		t.Fatalf("Probes(vectors) with Qdrant = %v, want the vectors probe", ps)
	}
	if err := ps[0].Check(context.Background()); err != nil {
		t.Fatalf("vectors probe while Qdrant answers: %v", err)
	}
	srv.Close()
	if err := ps[0].Check(context.Background()); err == nil {
		t.Fatal("vectors probe passed while Qdrant is down")
	}
}

// TestServicesImportNoConcreteRuntime: a service package reaches the embedded NATS server,
// ONNX Runtime and Qdrant only through this composition root, never by importing them.
func TestServicesImportNoConcreteRuntime(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		if testenv.InCI() {
			t.Fatal("no go command on PATH: CI must run this check")
		}
		t.Skip("no go command on PATH")
	}
	forbidden := []string{"github.com/nats-io/nats-server/v2/server", "github.com/yalue/onnxruntime_go", "github.com/qdrant/go-client/qdrant"}
	for _, s := range Services {
		pkg := "github.com/membus/membus/services/" + s
		out, err := exec.Command("go", "list", "-deps", pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
		}
		for _, dep := range strings.Fields(string(out)) {
			if slices.Contains(forbidden, dep) {
				t.Errorf("%s imports %s", pkg, dep)
			}
		}
	}
}

// TestConfigDefaultsAgree: the shared configuration's defaults are the services' own, so a
// service run with no settings behaves as its Defaults say (one home per default).
func TestConfigDefaultsAgree(t *testing.T) {
	c := config.Defaults()
	c.TZ = "UTC"
	sum := summarizer.Defaults()
	sum.Location = time.UTC
	rec, err := recall.ConfigFrom(recall.Defaults(), c)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		service   string
		got, want any
	}{
		{"ingest", ingestConfig(c), ingest.Defaults()},
		{"extract", extractConfig(c), extract.Defaults()},
		{"recall", rec, recall.Defaults()},
		{"summarizer", summarizerConfig(c), sum},
		{"gateway", gatewayConfig(c), gateway.Defaults()},
	} {
		if !reflect.DeepEqual(tc.got, tc.want) {
			t.Errorf("%s: from the shared defaults\n %+v\nbut its own defaults are\n %+v", tc.service, tc.got, tc.want)
		}
	}
}

// TestEmbedderProbe: with an OpenAI-compatible embedder the extract runner probes
// it (wire.go): the probe passes while the server embeds and fails while it answers 5xx.
func TestEmbedderProbe(t *testing.T) {
	env := openTestEnv(t)
	var down atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if down.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		_, _ = io.WriteString(w, `{"data":[{"index":0,"embedding":[0.6,0.8]}]}`)
	}))
	t.Cleanup(srv.Close)
	o, err := embed.NewOpenAI(srv.URL, "probe-model", "")
	if err != nil {
		t.Fatal(err)
	}
	env.Embedder = embed.NewCached(o, 10)
	ps := env.Probes("embedder")
	if len(ps) != 1 || ps[0].Name != "embedder" {
		t.Fatalf("Probes(embedder) with an OpenAI embedder = %v, want the embedder probe", ps)
	}
	if err := ps[0].Check(context.Background()); err != nil {
		t.Fatalf("embedder probe while the server embeds: %v", err)
	}
	down.Store(true)
	if err := ps[0].Check(context.Background()); err == nil {
		t.Fatal("embedder probe passed while the server answers 503")
	}
}

// TestExtractRidesOutAQdrantOutage: the extract service as the composition root builds it, its
// vector store Qdrant (the fake). A commit whose indexing fails while Qdrant is down is an
// outage: not one of the message's own failures, so never dead-lettered however long Qdrant
// stays down (docs/design.md §8), and it completes once Qdrant answers again.
func TestExtractRidesOutAQdrantOutage(t *testing.T) {
	env := openTestEnv(t)
	srv := withFakeQdrant(t, env)
	q := env.Vectors
	svc, err := Extract(env)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- svc.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	turn := store.Turn{AccountID: "acme", UserID: "alice", AgentID: "main", SessionID: "s1", EventID: "e1", Messages: []store.Message{
		{MessageID: "m1", Position: 0, Role: "user", Content: "I live in Boston and I have a dog named Max.", Parts: json.RawMessage(`[]`), Tokens: 12, CreatedAt: at},
	}}
	if _, err := env.Store.ApplyTurns(ctx, nil, []store.Turn{turn}); err != nil {
		t.Fatal(err)
	}
	srv.SetDown(true)
	req := contract.CommitRequest{V: contract.Version, RequestID: "r1", AccountID: "acme", UserID: "alice", AgentID: "main",
		SessionID: "s1", Kind: contract.CommitSync, Upto: 1, CreatedAt: time.Now().UTC()}
	data, _ := json.Marshal(req)
	if _, err := bus.Publish(ctx, env.JS, env.Names.Commits("acme", "s1"), "commit-r1", data, nil); err != nil {
		t.Fatal(err)
	}
	outages := func() float64 {
		fams, err := env.Registry("extract").Families()
		if err != nil {
			t.Fatal(err)
		}
		n := 0.0
		for _, m := range fams["membus_extract_outcomes_total"].GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "outcome" && l.GetValue() == bus.OutcomeOutage {
					n += m.GetCounter().GetValue()
				}
			}
		}
		return n
	}
	testenv.Eventually(t, 20*time.Second, 50*time.Millisecond, func() error {
		if n := outages(); n < 1 {
			return fmt.Errorf("%v outage outcomes while Qdrant is down, want the failed commit counted as an outage", n)
		}
		return nil
	})
	dlq, err := env.JS.Stream(ctx, env.Names.Stream(bus.StreamDLQ))
	if err != nil {
		t.Fatal(err)
	}
	if info, err := dlq.Info(ctx); err != nil || info.State.Msgs != 0 {
		t.Fatalf("DLQ while Qdrant is down: %+v %v, want empty", info.State, err)
	}

	srv.SetDown(false)
	testenv.Eventually(t, 30*time.Second, 100*time.Millisecond, func() error {
		n, err := q.Count(ctx, "acme")
		if err != nil || n == 0 {
			return fmt.Errorf("%d points in Qdrant (%w), want the commit's memories once it is back", n, err)
		}
		return nil
	})
	if info, err := dlq.Info(ctx); err != nil || info.State.Msgs != 0 {
		t.Fatalf("DLQ after the outage: %+v %v, want empty", info.State, err)
	}
}
