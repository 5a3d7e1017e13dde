package metrics_test

import (
	"net/http/httptest"
	"testing"

	dto "github.com/prometheus/client_model/go"

	"github.com/membus/membus/pkg/metrics"
)

func TestHistogramSum(t *testing.T) {
	m := metrics.New("ingest", "test")
	stage := m.HistogramVec("stage_seconds", "per stage", "stage")
	stage.WithLabelValues("sql").Observe(0.25)
	stage.WithLabelValues("sql").Observe(0.5)
	stage.WithLabelValues("redis").Observe(0.125)
	m.Histogram("handler_seconds", "per batch").Observe(1)

	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	scraped, err := metrics.ParseExposition(rec.Body)
	if err != nil {
		t.Fatal(err)
	}
	gathered, err := m.Families()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		family    string
		match     map[string]string
		sum       float64
		count     uint64
		ok        bool
		valueWant float64 // metrics.Value: the sample count
	}{
		{"one series of a vector", "membus_stage_seconds", map[string]string{"stage": "sql"}, 0.75, 2, true, 2},
		{"every series of a vector, summed", "membus_stage_seconds", nil, 0.875, 3, true, 3},
		{"a plain histogram", "membus_handler_seconds", nil, 1, 1, true, 1},
		{"a label value never observed", "membus_stage_seconds", map[string]string{"stage": "ack"}, 0, 0, false, 0},
		{"an unknown family", "membus_nothing_seconds", nil, 0, 0, false, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, src := range []struct {
				name string
				fams map[string]*dto.MetricFamily
			}{{"scraped", scraped}, {"gathered", gathered}} {
				f := src.fams
				sum, count, ok := metrics.HistogramSum(f, tc.family, tc.match)
				if sum != tc.sum || count != tc.count || ok != tc.ok {
					t.Errorf("%s: HistogramSum = %v, %d, %v; want %v, %d, %v", src.name, sum, count, ok, tc.sum, tc.count, tc.ok)
				}
				if v, ok := metrics.Value(f, tc.family, tc.match); v != tc.valueWant || ok != tc.ok {
					t.Errorf("%s: Value = %v, %v; want %v, %v", src.name, v, ok, tc.valueWant, tc.ok)
				}
			}
		})
	}
}
