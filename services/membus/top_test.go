package main

import (
	"bytes"
	"regexp"
	"testing"
	"time"

	"github.com/membus/membus/pkg/contract"
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
