package contract

import "time"

// MetricsSnapshot is published on core NATS to <p>.metrics.<service>.<instance> every 5 s.
// Counts and latencies only, never user text.
type MetricsSnapshot struct {
	V         int                  `json:"v"`
	Service   string               `json:"service"`
	Instance  string               `json:"instance"`
	At        time.Time            `json:"at"`
	UptimeS   float64              `json:"uptime_s"`
	Counters  map[string]float64   `json:"counters"`
	Gauges    map[string]float64   `json:"gauges"`
	Latencies map[string]LatencyMS `json:"latencies_ms"`
}

// LatencyMS summarises one histogram since start.
type LatencyMS struct {
	Count int64   `json:"count"`
	P50   float64 `json:"p50"`
	P95   float64 `json:"p95"`
	P99   float64 `json:"p99"`
}
