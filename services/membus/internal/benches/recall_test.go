package benches

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/membus/membus/pkg/embed"
)

// TestBenchRecall runs `membus bench recall` at a tiny size: the command keeps working and
// keeps its docs/design.md §10 output (one line per size, the floor and the ratio beside it).
func TestBenchRecall(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"bench", "recall", "--sizes", "50,120", "--count", "5", "--warmup", "1", "--json", "--restart=false"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines, want 2:\n%s", len(lines), stdout.String())
	}
	for i, size := range []float64{50, 120} {
		var m map[string]any
		if err := json.Unmarshal([]byte(lines[i]), &m); err != nil {
			t.Fatalf("line %d: %v", i, err)
		}
		if m["bench"] != "recall" || m["backend"] != "embedded" || m["size"] != size || m["embedder"] != embed.HashModel {
			t.Errorf("line %d: %v", i, m)
		}
		for _, k := range []string{"ops_per_sec", "p50_ms", "p99_ms", "floor_p50_ms", "floor_p99_ms", "ratio", "rss_mb"} {
			if v, ok := m[k].(float64); !ok || v <= 0 {
				t.Errorf("line %d: %s = %v, want a positive number", i, k, m[k])
			}
		}
	}
	if code := run([]string{"bench", "recall", "--sizes", "10,x"}, &stdout, &stderr); code != 2 {
		t.Errorf("bad --sizes: exit %d, want 2", code)
	}
	stderr.Reset()
	if code := run([]string{"bench", "recall", "--recall-candidates", "201"}, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), "--recall-candidates must be between 1 and 200") {
		t.Errorf("bad --recall-candidates: exit %d, stderr %q, want 2 and what is allowed", code, stderr.String())
	}
}
