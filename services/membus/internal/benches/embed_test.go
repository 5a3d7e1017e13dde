package benches

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/membus/membus/pkg/embed"
)

// TestBenchEmbed runs `membus bench embed` small: one docs/design.md §10 line per embedder and batch
// size, sentences/s as msgs_per_sec, the hash embedder as the floor of the ONNX rows. The
// ONNX rows appear when the model is present (MEMBUS_MODEL_DIR or data/models).
func TestBenchEmbed(t *testing.T) {
	dir := os.Getenv("MEMBUS_MODEL_DIR")
	if dir == "" {
		dir = filepath.Join("..", "..", "..", "..", "data", "models")
	}
	if _, err := os.Stat(filepath.Join(dir, "model.onnx")); err != nil {
		dir = t.TempDir()
	}
	var stdout, stderr bytes.Buffer
	if code := run([]string{"bench", "embed", "--model-dir", dir, "--batches", "1,4", "--sentences", "16", "--json"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	if len(lines) != 2 && len(lines) != 4 {
		t.Fatalf("%d lines, want 2 (hash) or 4 (hash and onnx):\n%s", len(lines), stdout.String())
	}
	for i, line := range lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("line %d: %v", i, err)
		}
		wantSize := []float64{1, 4}[i%2]
		if m["bench"] != "embed" || m["size"] != wantSize {
			t.Errorf("line %d: %v", i, m)
		}
		keys := []string{"ops_per_sec", "msgs_per_sec", "p50_ms", "rss_mb"}
		if i >= 2 {
			if !strings.HasPrefix(m["embedder"].(string), "onnx:") {
				t.Errorf("line %d: embedder %v, want onnx:…", i, m["embedder"])
			}
			keys = append(keys, "floor_ops_per_sec", "ratio")
		} else if m["embedder"] != embed.HashModel {
			t.Errorf("line %d: embedder %v, want %s", i, m["embedder"], embed.HashModel)
		}
		for _, k := range keys {
			if v, ok := m[k].(float64); !ok || v <= 0 {
				t.Errorf("line %d: %s = %v, want a positive number", i, k, m[k])
			}
		}
	}
	if code := run([]string{"bench", "embed", "--batches", "0"}, &stdout, &stderr); code != 2 {
		t.Errorf("bad --batches: exit %d, want 2", code)
	}
}
