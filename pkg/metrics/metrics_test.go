package metrics

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/membus/membus/pkg/contract"
	"github.com/membus/membus/schemas"
)

func snapshotSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	const name = "metrics_snapshot.schema.json"
	b, err := schemas.JSON.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	url := "https://membus.dev/schemas/" + name
	if err := c.AddResource(url, doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile(url)
	if err != nil {
		t.Fatal(err)
	}
	return sch
}

func validate(t *testing.T, sch *jsonschema.Schema, data []byte) {
	t.Helper()
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if err := sch.Validate(inst); err != nil {
		t.Fatalf("snapshot fails metrics_snapshot.schema.json:\n%v\n%s", err, data)
	}
}

func TestSnapshotContents(t *testing.T) {
	m := New("ingest", "host-a-42")
	m.Counter("turns_total", "turns handled").Add(3)
	m.Counter("turns_total", "asked again: same counter").Inc()
	msgs := m.CounterVec("messages_total", "messages by result", "result")
	msgs.WithLabelValues("stored").Add(7)
	msgs.WithLabelValues("duplicate").Inc()
	m.Gauge("pending_sessions", "sessions over the threshold").Set(5)
	h := m.Histogram("handle_seconds", "handler latency")
	for range 90 {
		h.Observe(0.0007) // bucket (0.5 ms, 1 ms]
	}
	for range 10 {
		h.Observe(2) // bucket (1 s, 2.5 s]
	}
	m.Histogram("idle_seconds", "never observed")

	s := m.Snapshot(time.Now().Add(time.Minute))
	if s.V != 1 || s.Service != "ingest" || s.Instance != "host-a-42" || s.UptimeS < 60 {
		t.Errorf("header = %+v", s)
	}
	wantCounters := map[string]float64{
		"membus_turns_total":                        4,
		`membus_messages_total{result="stored"}`:    7,
		`membus_messages_total{result="duplicate"}`: 1,
	}
	for k, want := range wantCounters {
		if got, ok := s.Counters[k]; !ok || got != want {
			t.Errorf("counter %s = %v (present %v), want %v", k, got, ok, want)
		}
	}
	if got := s.Gauges["membus_pending_sessions"]; got != 5 {
		t.Errorf("gauge = %v, want 5", got)
	}
	if _, ok := s.Gauges["go_goroutines"]; !ok {
		t.Error("go_goroutines missing from gauges")
	}
	for k := range s.Gauges {
		if strings.HasPrefix(k, "go_memstats") || strings.HasPrefix(k, "go_gc") {
			t.Errorf("runtime noise %s in snapshot", k)
		}
	}
	lat, ok := s.Latencies["membus_handle_seconds"]
	if !ok {
		t.Fatalf("latency missing: %+v", s.Latencies)
	}
	if lat.Count != 100 {
		t.Errorf("count = %d, want 100", lat.Count)
	}
	within := []struct {
		name     string
		got      float64
		min, max float64 // the bucket, in ms
	}{
		{"p50 in the 0.5-1 ms bucket", lat.P50, 0.5, 1},
		{"p95 in the 1-2.5 s bucket", lat.P95, 1000, 2500},
		{"p99 in the 1-2.5 s bucket", lat.P99, 1000, 2500},
	}
	for _, w := range within {
		if w.got < w.min || w.got > w.max {
			t.Errorf("%s: %v ms", w.name, w.got)
		}
	}
	if !(lat.P50 <= lat.P95 && lat.P95 <= lat.P99) {
		t.Errorf("quantiles not ordered: %+v", lat)
	}
	if idle := s.Latencies["membus_idle_seconds"]; idle != (contract.LatencyMS{}) {
		t.Errorf("unobserved histogram = %+v, want zeros", idle)
	}
	data, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	validate(t, snapshotSchema(t), data)
}

func TestQuantileEstimate(t *testing.T) {
	tests := []struct {
		name     string
		observe  []float64
		q        float64
		min, max float64 // seconds
	}{
		{"all in one bucket: inside it", []float64{0.003, 0.003, 0.003, 0.003}, 0.5, 0.0025, 0.005},
		{"first bucket interpolates from zero", []float64{0.0001, 0.0002}, 0.5, 0, 0.0005},
		{"past the last finite bucket: its upper bound", []float64{30, 40}, 0.99, 10, 10},
		{"median of a spread", []float64{0.0007, 0.003, 0.02, 0.2, 3}, 0.5, 0.01, 0.025},
		{"nothing observed is zero", nil, 0.99, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := New("recall", "i1")
			h := m.Histogram("q_seconds", "")
			for _, v := range tt.observe {
				h.Observe(v)
			}
			lat := m.Snapshot(time.Now()).Latencies["membus_q_seconds"]
			got := map[float64]float64{0.5: lat.P50, 0.95: lat.P95, 0.99: lat.P99}[tt.q] / 1000
			if got < tt.min || got > tt.max {
				t.Errorf("q%.2f = %v s, want within [%v, %v]", tt.q, got, tt.min, tt.max)
			}
		})
	}
}

func TestServicesInOneProcessDoNotCollide(t *testing.T) {
	a, b := New("ingest", "i1"), New("recall", "i1")
	a.Counter("requests_total", "").Add(2)
	b.Counter("requests_total", "").Add(5)
	if got := a.Snapshot(time.Now()).Counters["membus_requests_total"]; got != 2 {
		t.Errorf("ingest counter = %v, want 2", got)
	}
	rec := httptest.NewRecorder()
	b.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	if !strings.Contains(string(body), `membus_requests_total{service="recall"} 5`) {
		t.Errorf("/metrics lacks the recall counter:\n%.2000s", body)
	}
	if !strings.Contains(string(body), "go_goroutines") {
		t.Error("/metrics lacks the Go collector")
	}
}

func TestSameNameOtherKindPanics(t *testing.T) {
	m := New("x", "i")
	m.Counter("dup_total", "")
	defer func() {
		if recover() == nil {
			t.Error("no panic for a gauge named like a counter")
		}
	}()
	m.Gauge("dup_total", "")
}

func TestPublishDeliversSnapshots(t *testing.T) {
	srv, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	srv.Start()
	defer srv.Shutdown()
	if !srv.ReadyForConnections(5 * time.Second) {
		t.Fatal("nats server not ready")
	}
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	sub, err := nc.SubscribeSync("membus.metrics.ingest.>")
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}

	m := New("ingest", "host-a-42")
	m.Counter("turns_total", "").Add(9)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Publish(ctx, nc, "membus.metrics.ingest.host-a-42", 10*time.Millisecond) }()

	sch := snapshotSchema(t)
	for i := range 2 {
		msg, err := sub.NextMsg(5 * time.Second)
		if err != nil {
			t.Fatalf("snapshot %d: %v", i, err)
		}
		validate(t, sch, msg.Data)
		var s contract.MetricsSnapshot
		if err := json.Unmarshal(msg.Data, &s); err != nil {
			t.Fatal(err)
		}
		if s.Service != "ingest" || s.Counters["membus_turns_total"] != 9 {
			t.Errorf("snapshot %d = %+v", i, s)
		}
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Publish after cancel = %v, want nil", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Publish did not stop when ctx was cancelled")
	}
}

func TestPublishStopsOnClosedConnection(t *testing.T) {
	srv, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	srv.Start()
	defer srv.Shutdown()
	if !srv.ReadyForConnections(5 * time.Second) {
		t.Fatal("nats server not ready")
	}
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	nc.Close()
	err = New("x", "i").Publish(context.Background(), nc, "membus.metrics.x.i", time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("Publish on a closed connection = %v", err)
	}
}
