package metrics

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	dto "github.com/prometheus/client_model/go"

	"github.com/membus/membus/pkg/contract"
)

// DefaultPublishInterval is how often Publish sends a snapshot (docs/design.md §2.7).
const DefaultPublishInterval = 5 * time.Second

// runtimeMetrics are the few Go/process figures a snapshot carries besides membus_* ones.
var runtimeMetrics = map[string]bool{
	"go_goroutines":                 true,
	"process_resident_memory_bytes": true,
	"process_cpu_seconds_total":     true,
	"process_open_fds":              true,
}

// Snapshot gathers the registry into the bus payload: counters, gauges and latency
// histograms (p50/p95/p99 estimated from the buckets, in ms). A labelled series is keyed
// name{label="value",…}; the constant service label is left out (it is the snapshot's own).
func (m *Metrics) Snapshot(now time.Time) contract.MetricsSnapshot {
	s := contract.MetricsSnapshot{
		V: contract.Version, Service: m.service, Instance: m.instance, At: now.UTC(),
		UptimeS:   math.Max(0, now.Sub(m.start).Seconds()),
		Counters:  map[string]float64{},
		Gauges:    map[string]float64{},
		Latencies: map[string]contract.LatencyMS{},
	}
	families, err := m.Registry.Gather()
	if err != nil && len(families) == 0 {
		return s // Gather returns what it could alongside a partial error.
	}
	for _, f := range families {
		name := f.GetName()
		if !strings.HasPrefix(name, Prefix) && !runtimeMetrics[name] {
			continue
		}
		for _, mt := range f.GetMetric() {
			key := seriesKey(name, mt.GetLabel())
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				s.Counters[key] = mt.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				s.Gauges[key] = mt.GetGauge().GetValue()
			case dto.MetricType_HISTOGRAM:
				h := mt.GetHistogram()
				s.Latencies[key] = contract.LatencyMS{
					Count: int64(h.GetSampleCount()),
					P50:   1000 * quantile(0.50, h),
					P95:   1000 * quantile(0.95, h),
					P99:   1000 * quantile(0.99, h),
				}
			}
		}
	}
	return s
}

func seriesKey(name string, labels []*dto.LabelPair) string {
	var parts []string
	for _, l := range labels {
		if l.GetName() == "service" {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
	}
	if len(parts) == 0 {
		return name
	}
	sort.Strings(parts)
	return name + "{" + strings.Join(parts, ",") + "}"
}

// quantile estimates the q-quantile of a histogram as Prometheus' histogram_quantile does:
// linear interpolation inside the bucket that holds the rank; a rank past the last finite
// bucket answers that bucket's upper bound.
func quantile(q float64, h *dto.Histogram) float64 {
	total := float64(h.GetSampleCount())
	if total == 0 {
		return 0
	}
	rank := q * total
	lower, prevCount := 0.0, 0.0
	for _, b := range h.GetBucket() {
		upper, count := b.GetUpperBound(), float64(b.GetCumulativeCount())
		if math.IsInf(upper, +1) {
			break
		}
		if count >= rank {
			if count == prevCount {
				return upper
			}
			return lower + (upper-lower)*(rank-prevCount)/(count-prevCount)
		}
		lower, prevCount = upper, count
	}
	return lower
}

// Publish sends the JSON snapshot to subject on core NATS every `every` (DefaultPublishInterval
// when zero), starting at once, until ctx is done; then it returns nil. It returns an error
// only when the connection is closed for good.
func (m *Metrics) Publish(ctx context.Context, nc *nats.Conn, subject string, every time.Duration) error {
	if every <= 0 {
		every = DefaultPublishInterval
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		data, err := json.Marshal(m.Snapshot(time.Now()))
		if err != nil {
			return fmt.Errorf("encode metrics snapshot: %w", err)
		}
		// A publish while reconnecting is buffered or dropped; metrics are best effort.
		if err := nc.Publish(subject, data); errors.Is(err, nats.ErrConnectionClosed) {
			return fmt.Errorf("publish metrics to %s: %w", subject, err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}
