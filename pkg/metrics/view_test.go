package metrics

import (
	"reflect"
	"testing"
	"time"

	"github.com/membus/membus/pkg/contract"
)

func TestParseSeriesKey(t *testing.T) {
	tests := []struct {
		name   string
		key    string
		family string
		labels map[string]string
		ok     bool
	}{
		{"no labels", "membus_outbox_pending_rows", "membus_outbox_pending_rows", map[string]string{}, true},
		{"two labels", `membus_x{consumer="membus-ingest",stream="MEMBUS_TURNS"}`, "membus_x",
			map[string]string{"consumer": "membus-ingest", "stream": "MEMBUS_TURNS"}, true},
		{"a route with spaces and braces", `membus_h{route="GET /v1/sessions/{session_id}",status="200"}`, "membus_h",
			map[string]string{"route": "GET /v1/sessions/{session_id}", "status": "200"}, true},
		{"an escaped quote", `membus_x{reason="say \"hi\", ok"}`, "membus_x", map[string]string{"reason": `say "hi", ok`}, true},
		{"unterminated is refused", `membus_x{a="b`, "", nil, false},
		{"unquoted value is refused", `membus_x{a=b}`, "", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fam, labels, ok := ParseSeriesKey(tt.key)
			if ok != tt.ok || fam != tt.family || (tt.ok && !reflect.DeepEqual(labels, tt.labels)) {
				t.Errorf("ParseSeriesKey(%q) = %q %v %v", tt.key, fam, labels, ok)
			}
		})
	}
}

func TestSnapshotKeysParseBack(t *testing.T) {
	m := New("gateway", "i1")
	m.HistogramVec("gateway_http_request_duration_seconds", "", "route", "status").WithLabelValues("GET /v1/memories/{id}", "200").Observe(0.01)
	m.GaugeVec("jetstream_consumer_pending_messages", "", "stream", "consumer").WithLabelValues("MEMBUS_TURNS", "membus-ingest").Set(4)
	s := m.Snapshot(time.Now())
	rows := MergeLatencies([]contract.MetricsSnapshot{s}, "")
	if len(rows) != 1 || rows[0].Label != "GET /v1/memories/{id} 200" || rows[0].Count != 1 {
		t.Errorf("latency rows = %+v", rows)
	}
	lag := ConsumerLag([]contract.MetricsSnapshot{s})
	if len(lag) != 1 || lag[0].Consumer != "membus-ingest" || lag[0].Pending != 4 {
		t.Errorf("lag rows = %+v", lag)
	}
}
