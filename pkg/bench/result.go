package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// Percentile returns the p-th percentile (0..100) of the latencies by the
// nearest-rank method, or 0 when there are none.
func (r Result) Percentile(p float64) time.Duration {
	n := len(r.Latencies)
	if n == 0 {
		return 0
	}
	lats := r.Latencies
	if !slices.IsSorted(lats) {
		lats = slices.Clone(lats)
		slices.Sort(lats)
	}
	rank := int(math.Ceil(p / 100 * float64(n)))
	return lats[min(max(rank, 1), n)-1]
}

// OpsPerSec is Ops over Elapsed.
func (r Result) OpsPerSec() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Ops) / r.Elapsed.Seconds()
}

// MsgsPerSec is Msgs over Elapsed.
func (r Result) MsgsPerSec() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Msgs) / r.Elapsed.Seconds()
}

// lineKeys is the docs/design.md §10 field order.
var lineKeys = []string{
	"bench", "backend", "sync", "embedder", "size",
	"ops_per_sec", "msgs_per_sec", "p50_ms", "p95_ms", "p99_ms",
	"floor_ops_per_sec", "floor_p50_ms", "floor_p99_ms", "ratio", "rss_mb",
}

// Line returns the docs/design.md §10 JSON fields of r. Fields that do not apply are
// omitted: empty names, a zero size, msgs_per_sec when no messages were
// counted, latencies when there are none, the floor fields without a floor,
// rss_mb when unknown.
func (r Result) Line() map[string]any {
	m := map[string]any{"bench": r.Bench}
	for k, v := range map[string]string{"backend": r.Backend, "sync": r.Sync, "embedder": r.Embedder} {
		if v != "" {
			m[k] = v
		}
	}
	if r.Size > 0 {
		m["size"] = r.Size
	}
	if r.Elapsed > 0 {
		m["ops_per_sec"] = round(r.OpsPerSec(), 1)
		if r.Msgs > 0 {
			m["msgs_per_sec"] = round(r.MsgsPerSec(), 1)
		}
	}
	if len(r.Latencies) > 0 {
		m["p50_ms"] = ms(r.Percentile(50))
		m["p95_ms"] = ms(r.Percentile(95))
		m["p99_ms"] = ms(r.Percentile(99))
	}
	if f := r.Floor; f != nil {
		if f.Elapsed > 0 {
			m["floor_ops_per_sec"] = round(f.OpsPerSec(), 1)
			if r.Elapsed > 0 && f.OpsPerSec() > 0 {
				m["ratio"] = round(r.OpsPerSec()/f.OpsPerSec(), 4)
			}
		}
		if len(f.Latencies) > 0 {
			m["floor_p50_ms"] = ms(f.Percentile(50))
			m["floor_p99_ms"] = ms(f.Percentile(99))
		}
	}
	if r.RSSMB > 0 {
		m["rss_mb"] = round(r.RSSMB, 1)
	}
	return m
}

func ms(d time.Duration) float64 { return round(float64(d)/float64(time.Millisecond), 3) }

func round(x float64, places int) float64 {
	p := math.Pow(10, float64(places))
	return math.Round(x*p) / p
}

// WriteJSON writes one JSON object per result (JSON Lines), fields in docs/design.md §10
// order.
func WriteJSON(w io.Writer, rs ...Result) error {
	var buf bytes.Buffer
	for _, r := range rs {
		line := r.Line()
		buf.WriteByte('{')
		first := true
		for _, k := range lineKeys {
			v, ok := line[k]
			if !ok {
				continue
			}
			b, err := json.Marshal(v)
			if err != nil {
				return fmt.Errorf("bench json %s: %w", k, err)
			}
			if !first {
				buf.WriteByte(',')
			}
			first = false
			fmt.Fprintf(&buf, "%q:%s", k, b)
		}
		buf.WriteString("}\n")
	}
	if _, err := w.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("write bench json: %w", err)
	}
	return nil
}

// WriteTable writes a human table, the floor and the ratio beside each row.
func WriteTable(w io.Writer, rs ...Result) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "bench\tbackend\tsync\tembedder\tsize\tops/s\tmsgs/s\tp50 ms\tp95 ms\tp99 ms\tfloor ops/s\tfloor p50\tfloor p99\tratio\trss MB\t")
	for _, r := range rs {
		l := r.Line()
		cells := []string{r.Bench, dash(r.Backend), dash(r.Sync), dash(r.Embedder)}
		for _, k := range lineKeys[4:] {
			cells = append(cells, cell(l, k))
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t")
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write bench table: %w", err)
	}
	return nil
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func cell(l map[string]any, k string) string {
	switch v := l[k].(type) {
	case nil:
		return "-"
	case float64:
		if k == "ratio" {
			return strconv.FormatFloat(v, 'f', 3, 64) + "x"
		}
		if strings.HasSuffix(k, "_ms") {
			return strconv.FormatFloat(v, 'f', 3, 64)
		}
		return strconv.FormatFloat(v, 'f', 1, 64)
	default:
		return fmt.Sprint(v)
	}
}

// RSSMB returns this process's resident set size in MB from
// /proc/self/status (VmRSS), or, where that is unavailable, the memory the
// Go runtime obtained from the OS.
func RSSMB() float64 {
	if mb, ok := ProcessRSSMB("self"); ok {
		return mb
	}
	var mem runtime.MemStats
	runtime.ReadMemStats(&mem)
	return float64(mem.Sys) / (1 << 20)
}

// ProcessRSSMB returns the resident set size in MB of process pid ("self": this one) from
// /proc/<pid>/status (VmRSS); false where that is unavailable.
func ProcessRSSMB(pid string) (float64, bool) {
	b, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(rest) // "123456 kB"
			if len(f) >= 1 {
				if kb, err := strconv.ParseFloat(f[0], 64); err == nil {
					return kb / 1024, true
				}
			}
		}
	}
	return 0, false
}
