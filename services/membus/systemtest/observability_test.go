package systemtest

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/membus/membus/pkg/metrics"
	"github.com/membus/membus/pkg/store"
)

// TestObservabilityFilesNameRealMetrics reads every file of deploy/observability (Prometheus
// scrape config and alert rules, Grafana dashboard) and fails on a membus_ metric the running
// system does not expose, after a little load so that every labelled family has a series.
func TestObservabilityFilesNameRealMetrics(t *testing.T) {
	env, base := startEmbedded(t, t.TempDir())
	alice := newClient(t, env, base, "acme", "alice", store.RoleUser)
	postTurn(alice, "s-1", "I live in Boston and I have a dog named Max.", "Nice!", "I drink black coffee.")
	alice.must(200, "POST", "/v1/sessions/s-1/commit", map[string]any{"wait": true, "keep_recent": 0}, nil)
	alice.must(200, "POST", "/v1/recall", map[string]any{"query": "where do I live"}, nil)

	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fams, err := metrics.ParseExposition(strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	exposed := func(name string) bool {
		if _, ok := fams[name]; ok {
			return true
		}
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			if f, ok := fams[strings.TrimSuffix(name, suffix)]; ok && strings.HasSuffix(name, suffix) && f.GetType().String() == "HISTOGRAM" {
				return true
			}
		}
		return false
	}

	dir := filepath.Join("..", "..", "..", "deploy", "observability")
	var files []string
	err = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && (strings.HasSuffix(p, ".yml") || strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".json")) {
			files = append(files, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 3 {
		t.Fatalf("deploy/observability has %d files, want the scrape config, the rules and the dashboard", len(files))
	}
	name := regexp.MustCompile(`\bmembus_[a-z0-9_]+`)
	checked := map[string]bool{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var doc any
		if err := yaml.Unmarshal(data, &doc); err != nil { // JSON is YAML
			t.Errorf("%s does not parse: %v", f, err)
		}
		for _, m := range name.FindAllString(string(data), -1) {
			checked[m] = true
			if !exposed(m) {
				t.Errorf("%s names %s, which /metrics does not expose", f, m)
			}
		}
	}
	var names []string
	for n := range checked {
		names = append(names, n)
	}
	sort.Strings(names)
	if len(names) < 15 {
		t.Errorf("only %d metrics named in deploy/observability: %v", len(names), names)
	}
	t.Logf("%d metrics named in deploy/observability, all exposed: %s", len(names), strings.Join(names, " "))
}
