package benches

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/membus/membus/pkg/bench"
)

func TestE2ENamesAreDistinct(t *testing.T) {
	seen := map[string]int{}
	for i := range 5000 {
		n := e2eName(i)
		if j, ok := seen[n]; ok {
			t.Fatalf("e2eName(%d) = e2eName(%d) = %q", i, j, n)
		}
		seen[n] = i
	}
}

// TestBenchE2E runs a short e2e bench on a fresh embedded membus: every turn's memory became
// recallable (else the run fails), each measured operation has a latency, and the floor and
// the ratio are reported beside it.
func TestBenchE2E(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := benchE2E(ctx, "interval", e2eParams{count: 5, warmup: 1, embedder: "hash", timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if res.Bench != "e2e" || res.Ops != 5 || len(res.Latencies) != 5 || res.Floor == nil || res.Floor.Ops != 5 {
		t.Fatalf("result %+v, want 5 measured operations and a floor of 5", res)
	}
	var out bytes.Buffer
	if err := bench.WriteJSON(&out, res); err != nil {
		t.Fatal(err)
	}
	var line map[string]any
	if err := json.Unmarshal(out.Bytes(), &line); err != nil {
		t.Fatalf("not JSON: %v: %s", err, out.String())
	}
	for _, k := range []string{"bench", "backend", "sync", "embedder", "size", "p50_ms", "p99_ms", "floor_p50_ms", "floor_p99_ms", "ratio"} {
		if _, ok := line[k]; !ok {
			t.Errorf("JSON line lacks %s: %s", k, out.String())
		}
	}
	if line["bench"] != "e2e" || line["sync"] != "interval" || !strings.HasPrefix(line["embedder"].(string), "hash") {
		t.Errorf("JSON line %s", out.String())
	}
}

func TestBenchE2EFlags(t *testing.T) {
	for _, args := range [][]string{{"--sync", "never"}, {"--count", "0"}, {"--embedder", "auto"}, {"extra"}} {
		var stdout, stderr bytes.Buffer
		if code := run(append([]string{"bench", "e2e"}, args...), &stdout, &stderr); code != 2 || stderr.Len() == 0 {
			t.Errorf("bench e2e %q: code %d stderr %q, want 2 and a message", args, code, stderr.String())
		}
	}
}
