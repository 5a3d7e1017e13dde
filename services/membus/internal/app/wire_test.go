package app

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os/exec"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/membus/membus/pkg/config"
	"github.com/membus/membus/pkg/testenv"
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
