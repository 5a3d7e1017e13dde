package benches

import (
	"bytes"
	"encoding/json"
	"testing"
)

// The load run cannot rot: a tiny run answers with the JSON fields and no errors.
func TestBenchHTTP(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"bench", "http", "--clients", "4", "--duration", "1s", "--sync", "interval", "--json"}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	var line map[string]any
	if err := json.Unmarshal(out.Bytes(), &line); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	for _, k := range []string{"bench", "ops_per_sec", "p50_ms", "p99_ms", "error_rate", "status"} {
		if _, ok := line[k]; !ok {
			t.Errorf("no %q in %s", k, out.String())
		}
	}
	if line["error_rate"].(float64) != 0 {
		t.Errorf("errors in a tiny run: %s", out.String())
	}
}
