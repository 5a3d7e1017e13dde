package metrics_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"

	"github.com/membus/membus/pkg/bus"
	"github.com/membus/membus/pkg/metrics"
)

func jetStreamServer(t *testing.T) jetstream.JetStream {
	t.Helper()
	srv, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true,
		JetStream: true, StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	srv.Start()
	t.Cleanup(srv.Shutdown)
	if !srv.ReadyForConnections(5 * time.Second) {
		t.Fatal("nats server not ready")
	}
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

type fakeStore struct {
	backlog int64
	oldest  time.Time
	cats    map[string]int64
	err     error
}

func (f fakeStore) OutboxBacklog(context.Context) (int64, time.Time, error) {
	return f.backlog, f.oldest, f.err
}

func (f fakeStore) CategoryStats(_ context.Context, account string) (map[string]int64, error) {
	if account != "" {
		return nil, fmt.Errorf("asked for account %q, want every account", account)
	}
	return f.cats, f.err
}

func scrape(t *testing.T, m *metrics.Metrics) map[string]*dto.MetricFamily {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != 200 {
		t.Fatalf("/metrics = %d: %s", rec.Code, rec.Body)
	}
	fams, err := metrics.ParseExposition(rec.Body)
	if err != nil {
		t.Fatal(err)
	}
	return fams
}

// TestJetStreamFiguresMatchTheServer loads a consumer, leaves some messages unacked and
// dead-letters others, then checks that the scraped lag, ack-pending and DLQ depth are the
// server's own consumer info and DLQ counts, that the snapshot carries them, and that every
// family passes the Prometheus linter's naming rules.
func TestJetStreamFiguresMatchTheServer(t *testing.T) {
	js := jetStreamServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	names, _ := bus.NewNames("obs")
	if err := bus.EnsureStreams(ctx, js, names, bus.DefaultStreamLimits()); err != nil {
		t.Fatal(err)
	}
	durable := names.Consumer("ingest")
	cons, err := js.CreateOrUpdateConsumer(ctx, names.Stream(bus.StreamTurns), jetstream.ConsumerConfig{
		Durable: durable, AckPolicy: jetstream.AckExplicitPolicy, AckWait: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		if _, err := js.Publish(ctx, names.Turns("acme", fmt.Sprint("s", i)), []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
	}
	batch, err := cons.Fetch(3, jetstream.FetchMaxWait(5*time.Second)) // delivered, never acked
	if err != nil {
		t.Fatal(err)
	}
	got := 0
	for range batch.Messages() {
		got++
	}
	if got != 3 {
		t.Fatalf("fetched %d, want 3", got)
	}
	letters := map[string]int{"turns": 2, "commits": 1, "outbox": 4}
	for kind, n := range letters {
		for i := range n {
			if _, err := js.Publish(ctx, names.DLQ(kind, "acme", fmt.Sprint("s", i)), []byte(`{}`)); err != nil {
				t.Fatal(err)
			}
		}
	}

	m := metrics.New("gateway", "obs-test")
	m.ObserveJetStream(js, names, nil)
	oldest := time.Now().Add(-90 * time.Second)
	m.ObserveStore(fakeStore{backlog: 5, oldest: oldest, cats: map[string]int64{"preference": 3, "fact": 2}}, nil, nil)
	fams := scrape(t, m)

	info, err := cons.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	stream := names.Stream(bus.StreamTurns)
	series := map[string]string{"stream": stream, "consumer": durable}
	checks := []struct {
		name   string
		family string
		labels map[string]string
		want   float64
	}{
		{"lag is the consumer's num_pending", "membus_jetstream_consumer_pending_messages", series, float64(info.NumPending)},
		{"ack-pending is num_ack_pending", "membus_jetstream_consumer_ack_pending_messages", series, float64(info.NumAckPending)},
		{"redelivered is num_redelivered", "membus_jetstream_consumer_redelivered_messages", series, float64(info.NumRedelivered)},
		{"turns stream holds what was published", "membus_jetstream_stream_messages", map[string]string{"stream": stream}, 10},
		{"DLQ depth of turns", "membus_dlq_messages", map[string]string{"stream": "turns"}, 2},
		{"DLQ depth of commits", "membus_dlq_messages", map[string]string{"stream": "commits"}, 1},
		{"DLQ depth of outbox", "membus_dlq_messages", map[string]string{"stream": "outbox"}, 4},
		{"DLQ depth of events is listed at zero", "membus_dlq_messages", map[string]string{"stream": "events"}, 0},
		{"outbox backlog", "membus_outbox_pending_rows", nil, 5},
		{"memories per category", "membus_memories_active", map[string]string{"category": "preference"}, 3},
		{"JetStream collection up", "membus_observe_jetstream_up", nil, 1},
		{"SQL collection up", "membus_observe_sql_up", nil, 1},
	}
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			got, ok := metrics.Value(fams, c.family, c.labels)
			if !ok || got != c.want {
				t.Errorf("%s%v = %v (present %v), want %v", c.family, c.labels, got, ok, c.want)
			}
		})
	}
	if info.NumPending != 7 || info.NumAckPending != 3 {
		t.Errorf("consumer info pending %d ack-pending %d, want 7 and 3", info.NumPending, info.NumAckPending)
	}
	if age, _ := metrics.Value(fams, "membus_outbox_oldest_pending_age_seconds", nil); age < 89 || age > 120 {
		t.Errorf("oldest outbox row age = %v s, want about 90", age)
	}

	// The bus snapshot carries the same gauges.
	snap := m.Snapshot(time.Now())
	key := fmt.Sprintf("membus_jetstream_consumer_pending_messages{consumer=%q,stream=%q}", durable, stream)
	if snap.Gauges[key] != 7 {
		t.Errorf("snapshot gauge %s = %v, want 7 (gauges: %v)", key, snap.Gauges[key], snap.Gauges)
	}
	if snap.Gauges[`membus_dlq_messages{stream="outbox"}`] != 4 || snap.Gauges["membus_outbox_pending_rows"] != 5 {
		t.Errorf("snapshot lacks the DLQ depth or outbox backlog: %v", snap.Gauges)
	}

	// Per account: the letters of acme only.
	if d, err := metrics.DLQDepth(ctx, js, names, "acme"); err != nil || d["outbox"] != 4 || d["turns"] != 2 {
		t.Errorf("DLQDepth(acme) = %v, %v", d, err)
	}
	if d, err := metrics.DLQDepth(ctx, js, names, "other"); err != nil || d["outbox"] != 0 || d["turns"] != 0 {
		t.Errorf("DLQDepth(other) = %v, %v; want zeros", d, err)
	}

	lintClean(t, fams)
}

func TestObserveStoreDownKeepsTheScrape(t *testing.T) {
	m := metrics.New("gateway", "obs-test")
	m.ObserveStore(fakeStore{err: fmt.Errorf("sql down")}, nil, nil)
	fams := scrape(t, m)
	if up, ok := metrics.Value(fams, "membus_observe_sql_up", nil); !ok || up != 0 {
		t.Errorf("membus_observe_sql_up = %v (present %v), want 0", up, ok)
	}
	if _, ok := fams["membus_outbox_pending_rows"]; ok {
		t.Error("outbox backlog reported although SQL is down")
	}
}

// lintClean fails on any Prometheus naming problem (units, _total, base units) of a membus_
// family.
func lintClean(t *testing.T, fams map[string]*dto.MetricFamily) {
	t.Helper()
	var mine []*dto.MetricFamily
	for name, f := range fams {
		if len(name) > 7 && name[:7] == "membus_" {
			mine = append(mine, f)
		}
	}
	problems, err := promlint.NewWithMetricFamilies(mine).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}
}
