package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/membus/membus/pkg/bus"
	"github.com/membus/membus/pkg/contract"
	"github.com/membus/membus/pkg/metrics"
	"github.com/membus/membus/pkg/store"
)

func TestTopRendersEveryPanel(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	clock := now
	st := newTopState(func() time.Time { return clock })
	snap := func(service string, counters, gauges map[string]float64) contract.MetricsSnapshot {
		return contract.MetricsSnapshot{V: 1, Service: service, Instance: "i1", At: clock, UptimeS: 60,
			Counters: counters, Gauges: gauges, Latencies: map[string]contract.LatencyMS{
				`membus_recall_duration_seconds{outcome="degraded"}`: {Count: 3, P50: 1, P95: 2, P99: 4}}}
	}
	st.add(snap("ingest", map[string]float64{"membus_ingest_messages_stored_total": 10}, nil))
	st.add(snap("gateway", nil, map[string]float64{
		`membus_jetstream_consumer_pending_messages{consumer="membus-ingest",stream="MEMBUS_TURNS"}`: 12,
		`membus_dlq_messages{stream="turns"}`:                                                        2,
		"membus_outbox_pending_rows":                                                                 5,
		"membus_outbox_oldest_pending_age_seconds":                                                   30,
		`membus_memories_active{category="preference"}`:                                              7,
	}))
	st.setAgents([]contract.AgentStats{{AccountID: "acme", AgentID: "helper", Sessions: 1, Messages: 9, Memories: 2}}, nil)
	_ = st.view("membus")               // the first view sets the base of the rates
	clock = clock.Add(22 * time.Second) // gateway's snapshot is now 22 s old: stale
	st.add(snap("ingest", map[string]float64{"membus_ingest_messages_stored_total": 30}, nil))
	var out bytes.Buffer
	renderTop(&out, st.view("membus"))
	screen := out.String()
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`messages\s+0\.9\s+30`), // 20 more over 22 s
		regexp.MustCompile(`membus-ingest\s+MEMBUS_TURNS\s+12\s+0\s+0`),
		regexp.MustCompile(`dlq: .*turns 2`),
		regexp.MustCompile(`outbox: 5 pending, oldest 30 s`),
		regexp.MustCompile(`recall degraded\s+6\s+1\.0\s+2\.0\s+4\.0`), // both instances' 3
		regexp.MustCompile(`preference 7`),
		regexp.MustCompile(`acme / helper\s+1\s+9\s+2`),
		regexp.MustCompile(`gateway / i1\s+22 s ago\s+60 s\s+STALE`),
		regexp.MustCompile(`2 instances \(1 stale\)`),
	} {
		if !want.MatchString(screen) {
			t.Errorf("screen lacks %s:\n%s", want, screen)
		}
	}
}

// TestTopAndMetricsOnALoadedSystem runs the whole system, leaves a consumer with a backlog,
// dead-letters turns and checks that /metrics and `membus top --once` show the lag, DLQ depth
// and outbox backlog the server and SQL hold.
func TestTopAndMetricsOnALoadedSystem(t *testing.T) {
	env, base := startEmbedded(t, t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	alice := newClient(t, env, base, "acme", "alice", store.RoleUser)
	postTurn(alice, "s-1", "I live in Boston and I have a dog named Max.", "Nice!", "I drink black coffee.")
	alice.must(200, "POST", "/v1/sessions/s-1/commit", map[string]any{"wait": true, "keep_recent": 0}, nil)
	for i := range 3 {
		if _, err := env.JS.Publish(ctx, env.Names.Turns("acme", fmt.Sprint("bad-", i)), []byte("not json")); err != nil {
			t.Fatal(err)
		}
	}
	// A consumer nobody fetches from: a backlog that stays put, so the scrape and the server agree.
	idle := env.Names.Consumer("idle-observer")
	if _, err := env.JS.CreateOrUpdateConsumer(ctx, env.Names.Stream(bus.StreamEvents), jetstream.ConsumerConfig{
		Durable: idle, AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
		t.Fatal(err)
	}
	postTurn(alice, "s-2", "I am planning a trip to Lisbon.", "Sounds fun.")
	alice.must(200, "POST", "/v1/sessions/s-2/commit", map[string]any{"wait": true, "keep_recent": 0}, nil)

	scrape := func() string {
		resp, err := http.Get(base + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	var body string
	var pending uint64
	deadline := time.Now().Add(30 * time.Second)
	for {
		body = scrape()
		fams, err := metrics.ParseExposition(strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		c, err := env.JS.Consumer(ctx, env.Names.Stream(bus.StreamEvents), idle)
		if err != nil {
			t.Fatal(err)
		}
		info, err := c.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		pending = info.NumPending
		lag, _ := metrics.Value(fams, "membus_jetstream_consumer_pending_messages", map[string]string{"consumer": idle})
		dlq, _ := metrics.Value(fams, "membus_dlq_messages", map[string]string{"stream": "turns"})
		backlog, okOutbox := metrics.Value(fams, "membus_outbox_pending_rows", nil)
		sqlBacklog, _, err := env.Store.OutboxBacklog(ctx)
		if err != nil {
			t.Fatal(err)
		}
		depth, err := metrics.DLQDepth(ctx, env.JS, env.Names, "")
		if err != nil {
			t.Fatal(err)
		}
		if pending > 0 && uint64(lag) == pending && dlq == 3 && depth["turns"] == 3 && okOutbox && int64(backlog) == sqlBacklog {
			t.Logf("lag %v = consumer info num_pending %d; DLQ turns %v = stream %d; outbox %v = SQL %d", lag, pending, dlq, depth["turns"], backlog, sqlBacklog)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/metrics never matched the server: lag %v vs num_pending %d, dlq %v vs %d, outbox %v vs %d", lag, pending, dlq, depth["turns"], backlog, sqlBacklog)
		}
		time.Sleep(200 * time.Millisecond)
	}

	var out, errOut bytes.Buffer
	if code := run([]string{"top", "--once", "--nats-url", env.NATSURL, "--nats-token", env.Config.NATSToken}, &out, &errOut); code != 0 {
		t.Fatalf("membus top exited %d: %s", code, errOut.String())
	}
	screen := out.String()
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(regexp.QuoteMeta(idle) + `\s+\S+_EVENTS\s+[1-9]\d*\s`), // events still arrive: at least the backlog seen
		regexp.MustCompile(`dlq: .*turns 3`),
		regexp.MustCompile(`outbox: \d+ pending`),
		regexp.MustCompile(`gateway / \S+\s+\d+ s ago`),
		regexp.MustCompile(`recall / \S+\s+\d+ s ago`),
		regexp.MustCompile(`commit\s+\d+`),
	} {
		if !want.MatchString(screen) {
			t.Errorf("membus top lacks %s:\n%s", want, screen)
		}
	}
	t.Logf("membus top --once:\n%s", screen)
}
