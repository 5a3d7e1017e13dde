package benches

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/membus/membus/pkg/store"
	"github.com/membus/membus/pkg/testenv"
	"github.com/membus/membus/services/ingest"
)

// tinyIngestBench are flags small enough for a test: the point is that the command keeps
// working and keeps its output contract, not its speed.
var tinyIngestBench = []string{"--events", "20", "--sessions", "3", "--warmup", "4", "--rate", "400", "--duration", "100ms"}

// checkIngestLines checks docs/design.md §10 JSON Lines of `membus bench ingest`: one per sync mode, in
// order, every field that applies to ingest present and consistent.
func checkIngestLines(t *testing.T, out, backend string, modes ...string) {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != len(modes) {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), len(modes), out)
	}
	for i, line := range lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("line %d is not JSON: %v: %s", i, err, line)
		}
		if m["bench"] != "ingest" || m["backend"] != backend || m["sync"] != modes[i] {
			t.Errorf("line %d: bench/backend/sync = %v/%v/%v, want ingest/%s/%s", i, m["bench"], m["backend"], m["sync"], backend, modes[i])
		}
		if m["size"] != 40.0 {
			t.Errorf("line %d: size %v, want 40 (20 events × 2 messages)", i, m["size"])
		}
		for _, k := range []string{"ops_per_sec", "msgs_per_sec", "p50_ms", "p95_ms", "p99_ms", "floor_ops_per_sec", "floor_p50_ms", "floor_p99_ms", "ratio", "rss_mb"} {
			if v, ok := m[k].(float64); !ok || v <= 0 {
				t.Errorf("line %d: %s = %v, want a positive number", i, k, m[k])
			}
		}
		if m["ops_per_sec"] != m["msgs_per_sec"] {
			t.Errorf("line %d: ops_per_sec %v != msgs_per_sec %v: ingest counts messages in both", i, m["ops_per_sec"], m["msgs_per_sec"])
		}
		if p50, p99 := m["p50_ms"].(float64), m["p99_ms"].(float64); p50 > p99 {
			t.Errorf("line %d: p50 %v > p99 %v", i, p50, p99)
		}
		if _, ok := m["embedder"]; ok {
			t.Errorf("line %d: embedder reported by a bench that embeds nothing", i)
		}
	}
}

// stageTables parses the stage breakdowns `membus bench ingest` prints on stderr: per table,
// seconds by row name.
func stageTables(out string) []map[string]float64 {
	var tables []map[string]float64
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "where ingest's time went") {
			tables = append(tables, map[string]float64{})
			continue
		}
		f := strings.Fields(line)
		if len(tables) == 0 || len(f) < 4 || !strings.HasSuffix(f[len(f)-2], "%") {
			continue
		}
		if secs, err := strconv.ParseFloat(f[len(f)-3], 64); err == nil {
			tables[len(tables)-1][strings.Join(f[:len(f)-3], " ")] = secs
		}
	}
	return tables
}

// checkStageBreakdown checks the stage breakdown of each sync mode's membus throughput phase:
// every stage the backend goes through took time, the others none, and the stages inside the
// handler add up to about its time: at least 90 %, and never more (rounding aside).
func checkStageBreakdown(t *testing.T, stderr string, redis bool, modes int) {
	t.Helper()
	tables := stageTables(stderr)
	if len(tables) != modes {
		t.Fatalf("%d stage breakdowns, want %d (one per sync mode):\n%s", len(tables), modes, stderr)
	}
	for i, rows := range tables {
		handler := rows["handler"]
		if handler <= 0 || rows["ack (after the handler)"] <= 0 {
			t.Errorf("table %d: handler %v s, ack %v s, want both positive:\n%s", i, handler, rows["ack (after the handler)"], stderr)
		}
		inside := rows["other"]
		for _, st := range ingest.Stages() {
			if st == ingest.StageAck {
				continue
			}
			secs, ok := rows[st]
			if !ok {
				t.Errorf("table %d: no row for stage %s:\n%s", i, st, stderr)
			}
			inside += secs
			// The outbox stage runs on every batch but is a comparison unless a commit fires or
			// the session's unrequested tokens must be summed: in a short run it may print 0.0 ms.
			tiny := st == store.StageOutbox
			switch runs := st != ingest.StageDedupCheck && (redis || !strings.HasPrefix(st, "redis_")); {
			case runs && secs < 0, runs && !tiny && secs == 0:
				t.Errorf("table %d: stage %s took %v s, want time", i, st, secs)
			case !runs && secs != 0:
				t.Errorf("table %d: stage %s took %v s, want none (never reached on this backend and run)", i, st, secs)
			}
		}
		const rounding = 0.0001 * 12 // every row is printed to 0.1 ms
		// "other" is the handler's time between its stages: its own bookkeeping, and the
		// scheduler's delays when the machine is busy. A quiet run leaves a few per cent there;
		// with go test -p 4 beside the plugin suite (load average 8) it was 21 % of a 0.38 s
		// handler. What this checks is that the stages account for most of the handler — a
		// stage left unmeasured (SQL, Redis) would be the larger part — not how busy the
		// machine is: a tighter bound failed CI on a busy machine.
		if other := rows["other"]; other < -rounding || other > 0.5*handler {
			t.Errorf("table %d: %v s of %v s handler time in no stage, want under half:\n%s", i, other, handler, stderr)
		}
		if d := inside - handler; d > rounding || d < -rounding {
			t.Errorf("table %d: stages and other sum to %v s, handler %v s", i, inside, handler)
		}
	}
}

func TestBenchIngestEmbedded(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run(append([]string{"bench", "ingest", "--json"}, tinyIngestBench...), &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	checkIngestLines(t, stdout.String(), "embedded", "always", "interval")
	checkStageBreakdown(t, stderr.String(), false, 2)
	if strings.Contains(stderr.String(), "\r") {
		t.Errorf("progress bar drawn into a non-terminal stderr: %q", stderr.String())
	}
	if !strings.Contains(stderr.String(), "paced at 400 msg/s") {
		t.Errorf("stderr lacks the run's parameters: %q", stderr.String())
	}
}

func TestBenchIngestTableAndProgress(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run(append([]string{"bench", "ingest", "--sync", "interval", "--progress"}, tinyIngestBench...), &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	rows := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	if len(rows) != 2 || !strings.Contains(rows[0], "floor ops/s") || !strings.Contains(rows[1], "interval") || !strings.Contains(rows[1], "x") {
		t.Errorf("table:\n%s", stdout.String())
	}
	if !strings.Contains(stderr.String(), "\rmembus throughput [") || !strings.Contains(stderr.String(), "\rfloor latency [") {
		t.Errorf("--progress drew no bar: %q", stderr.String())
	}
}

// TestBenchIngestRounds: --rounds 3 measures membus and the floor three times each, alternating,
// prints each round's ratio and a stage breakdown per membus round, and reports one row whose
// ratio is the median of the three printed.
func TestBenchIngestRounds(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run(append([]string{"bench", "ingest", "--json", "--sync", "interval", "--rounds", "3"}, tinyIngestBench...), &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	checkIngestLines(t, stdout.String(), "embedded", "interval")
	checkStageBreakdown(t, stderr.String(), false, 3)
	var order []string // "membus" and "floor" throughput phases in the order they ran
	var ratios []float64
	for _, line := range strings.Split(stderr.String(), "\n") {
		switch {
		case strings.Contains(line, " membus: ") && strings.HasSuffix(line, "msg/s"):
			order = append(order, "membus")
		case strings.Contains(line, " floor: ") && strings.HasSuffix(line, "msg/s"):
			order = append(order, "floor")
		case strings.Contains(line, "round ") && strings.Contains(line, ": ratio "):
			r, err := strconv.ParseFloat(strings.TrimSuffix(line[strings.LastIndex(line, " ")+1:], "x"), 64)
			if err != nil {
				t.Fatalf("round line %q: %v", line, err)
			}
			ratios = append(ratios, r)
		}
	}
	if want := []string{"membus", "floor", "membus", "floor", "membus", "floor"}; strings.Join(order, ",") != strings.Join(want, ",") {
		t.Errorf("throughput phases ran %v, want %v", order, want)
	}
	if len(ratios) != 3 {
		t.Fatalf("%d round ratios printed, want 3:\n%s", len(ratios), stderr.String())
	}
	sorted := slices.Clone(ratios)
	slices.Sort(sorted)
	var m map[string]any
	if err := json.Unmarshal([]byte(strings.TrimSpace(stdout.String())), &m); err != nil {
		t.Fatal(err)
	}
	if got := m["ratio"].(float64); math.Abs(got-sorted[1]) > 0.0015 {
		t.Errorf("row ratio %v, want the median of the rounds' %v", got, ratios)
	}
	if !strings.Contains(stderr.String(), fmt.Sprintf("median ratio %.3fx of 3 rounds", sorted[1])) {
		t.Errorf("stderr lacks the median line:\n%s", stderr.String())
	}
}

// TestBenchIngestReal runs the bench against MariaDB and Redis (with an embedded NATS server).
func TestBenchIngestReal(t *testing.T) {
	t.Setenv("MEMBUS_MYSQL_DSN", testenv.MySQLDSN(t))
	t.Setenv("MEMBUS_REDIS_URL", testenv.RedisURLValue(t))
	t.Setenv("MEMBUS_NATS_URL", "")
	var stdout, stderr bytes.Buffer
	if code := run(append([]string{"bench", "ingest", "--json", "--backend", "real", "--sync", "interval"}, tinyIngestBench...), &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	checkIngestLines(t, stdout.String(), "real", "interval")
	checkStageBreakdown(t, stderr.String(), true, 1)
}

func TestBenchIngestBadUsage(t *testing.T) {
	tests := []struct {
		name     string
		env      map[string]string
		args     []string
		contains []string
	}{
		{"real without its variables", map[string]string{"MEMBUS_MYSQL_DSN": "", "MEMBUS_REDIS_URL": ""},
			[]string{"--backend", "real"}, []string{"MEMBUS_MYSQL_DSN and MEMBUS_REDIS_URL unset"}},
		{"real without Redis", map[string]string{"MEMBUS_MYSQL_DSN": "u:p@tcp(127.0.0.1:1)/x", "MEMBUS_REDIS_URL": ""},
			[]string{"--backend", "real"}, []string{"MEMBUS_REDIS_URL unset"}},
		{"external NATS needs one named sync mode", map[string]string{"MEMBUS_MYSQL_DSN": "u:p@tcp(127.0.0.1:1)/x", "MEMBUS_REDIS_URL": "redis://127.0.0.1:1", "MEMBUS_NATS_URL": "nats://127.0.0.1:1"},
			[]string{"--backend", "real"}, []string{"--sync always or --sync interval"}},
		{"unknown backend", nil, []string{"--backend", "cloud"}, []string{"--backend must be embedded or real"}},
		{"unknown sync", nil, []string{"--sync", "never"}, []string{"--sync must be always, interval or both"}},
		{"zero events", nil, []string{"--events", "0"}, []string{"must be positive"}},
		{"zero rounds", nil, []string{"--rounds", "0"}, []string{"--rounds must be positive"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			var stdout, stderr bytes.Buffer
			if code := run(append([]string{"bench", "ingest"}, tc.args...), &stdout, &stderr); code != 2 {
				t.Fatalf("exit %d, want 2: %s", code, stderr.String())
			}
			for _, c := range tc.contains {
				if !strings.Contains(stderr.String(), c) {
					t.Errorf("stderr %q lacks %q", stderr.String(), c)
				}
			}
			if stdout.Len() != 0 {
				t.Errorf("stdout %q, want nothing", stdout.String())
			}
		})
	}
}
