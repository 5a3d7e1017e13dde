package metrics

import (
	"sort"
	"strconv"
	"strings"

	"github.com/membus/membus/pkg/contract"
)

// ParseSeriesKey splits a snapshot series key, name{k="v",…} (as metrics.Snapshot writes it),
// into the family name and its labels; ok is false for a key it cannot read.
func ParseSeriesKey(key string) (name string, labels map[string]string, ok bool) {
	i := strings.IndexByte(key, '{')
	if i < 0 {
		return key, map[string]string{}, true
	}
	if !strings.HasSuffix(key, "}") {
		return "", nil, false
	}
	name, rest := key[:i], key[i+1:len(key)-1]
	labels = map[string]string{}
	for rest != "" {
		eq := strings.IndexByte(rest, '=')
		if eq <= 0 || eq+1 >= len(rest) || rest[eq+1] != '"' {
			return "", nil, false
		}
		k := rest[:eq]
		// The value is a Go-quoted string: find its closing quote, skipping escapes.
		j := eq + 2
		for j < len(rest) && rest[j] != '"' {
			if rest[j] == '\\' {
				j++
			}
			j++
		}
		if j >= len(rest) {
			return "", nil, false
		}
		v, err := strconv.Unquote(rest[eq+1 : j+1])
		if err != nil {
			return "", nil, false
		}
		labels[k] = v
		rest = strings.TrimPrefix(rest[j+1:], ",")
	}
	return name, labels, true
}

// LatencyRow is one latency row of the dashboard and `membus top`: percentiles in ms since the instances
// started, merged over instances (counts add up, percentiles take the worst instance's).
type LatencyRow struct {
	Name  string  `json:"name"`  // recall, commit, extraction, gateway
	Label string  `json:"label"` // outcome or route and status; "" when the series has none
	Count int64   `json:"count"`
	P50   float64 `json:"p50_ms"`
	P95   float64 `json:"p95_ms"`
	P99   float64 `json:"p99_ms"`
}

// latencyFamilies maps the histogram families the dashboard shows to their row name.
var latencyFamilies = map[string]string{
	"membus_recall_duration_seconds":               "recall",
	"membus_extract_commit_seconds":                "commit",
	"membus_extract_extraction_seconds":            "extraction",
	"membus_ingest_batch_seconds":                  "ingest batch",
	"membus_gateway_http_request_duration_seconds": "gateway",
}

// maxGatewayRoutes bounds the gateway rows: the busiest routes.
const maxGatewayRoutes = 8

// MergeLatencies turns the latest snapshot of every instance into latency rows: recall by
// outcome, ingest batch, extraction, commit, then the busiest gateway routes (skipRoute, the
// dashboard's own stream whose requests last as long as the page is open, is left out).
func MergeLatencies(snaps []contract.MetricsSnapshot, skipRoute string) []LatencyRow {
	rows := map[[2]string]*LatencyRow{}
	for _, s := range snaps {
		for key, l := range s.Latencies {
			name, labels, ok := ParseSeriesKey(key)
			row, known := latencyFamilies[name]
			if !ok || !known || l.Count == 0 {
				continue
			}
			label := labels["outcome"]
			if row == "gateway" {
				if labels["route"] == skipRoute {
					continue
				}
				label = labels["route"] + " " + labels["status"]
			}
			k := [2]string{row, label}
			r := rows[k]
			if r == nil {
				r = &LatencyRow{Name: row, Label: label}
				rows[k] = r
			}
			r.Count += l.Count
			r.P50, r.P95, r.P99 = max(r.P50, l.P50), max(r.P95, l.P95), max(r.P99, l.P99)
		}
	}
	var out, gw []LatencyRow
	for _, r := range rows {
		if r.Name == "gateway" {
			gw = append(gw, *r)
		} else {
			out = append(out, *r)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Name != out[j].Name {
			return out[i].Name > out[j].Name // recall first, then ingest, extraction, commit
		}
		return out[i].Label < out[j].Label
	})
	sort.Slice(gw, func(i, j int) bool {
		if gw[i].Count != gw[j].Count {
			return gw[i].Count > gw[j].Count
		}
		return gw[i].Label < gw[j].Label
	})
	if len(gw) > maxGatewayRoutes {
		gw = gw[:maxGatewayRoutes]
	}
	return append(out, gw...)
}

// LagRow is one durable consumer's backlog.
type LagRow struct {
	Stream      string  `json:"stream"`
	Consumer    string  `json:"consumer"`
	Pending     float64 `json:"pending"`
	AckPending  float64 `json:"ack_pending"`
	Redelivered float64 `json:"redelivered"`
}

// ConsumerLag reads the JetStream gauges of the snapshots (the gateway's carry them); with
// several gateways the figures are the same server's, so the largest is kept.
func ConsumerLag(snaps []contract.MetricsSnapshot) []LagRow {
	byKey := map[[2]string]*LagRow{}
	for _, s := range snaps {
		for key, v := range s.Gauges {
			name, labels, ok := ParseSeriesKey(key)
			if !ok || !strings.HasPrefix(name, "membus_jetstream_consumer_") {
				continue
			}
			k := [2]string{labels["stream"], labels["consumer"]}
			l := byKey[k]
			if l == nil {
				l = &LagRow{Stream: k[0], Consumer: k[1]}
				byKey[k] = l
			}
			switch name {
			case "membus_jetstream_consumer_pending_messages":
				l.Pending = max(l.Pending, v)
			case "membus_jetstream_consumer_ack_pending_messages":
				l.AckPending = max(l.AckPending, v)
			case "membus_jetstream_consumer_redelivered_messages":
				l.Redelivered = max(l.Redelivered, v)
			}
		}
	}
	out := make([]LagRow, 0, len(byKey))
	for _, l := range byKey {
		out = append(out, *l)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Stream != out[j].Stream {
			return out[i].Stream > out[j].Stream // TURNS, EVENTS, COMMITS
		}
		return out[i].Consumer < out[j].Consumer
	})
	return out
}

// GaugeMax is the largest value of an unlabelled gauge across the snapshots, and whether any
// snapshot had it.
func GaugeMax(snaps []contract.MetricsSnapshot, name string) (float64, bool) {
	v, found := 0.0, false
	for _, s := range snaps {
		if g, ok := s.Gauges[name]; ok {
			v, found = max(v, g), true
		}
	}
	return v, found
}
