package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/membus/membus/pkg/bus"
	"github.com/membus/membus/pkg/contract"
	"github.com/membus/membus/pkg/metrics"
	"github.com/membus/membus/pkg/store"
	"github.com/membus/membus/services/gateway/request"
)

// Dashboard feed limits.
const (
	dashMaxLetters     = 8                // newest dead letters shown
	dashLetterLookback = 500              // DLQ messages read back at connect for them
	dashStaleAfter     = 15 * time.Second // an instance is stale after three missed snapshots
	dashStatsEvery     = 10 * time.Second // stats RPC refresh (SQL counts)
	dashTrendDays      = 14
	dashTopAgents      = 8
)

// dashFrame is one SSE frame of the dashboard. Scope is the account the figures are
// restricted to, or "*" for an operator key; the platform panels (instances, consumer lag,
// latencies, outbox, DLQ by stream for operators) hold no account's data.
type dashFrame struct {
	At         time.Time               `json:"at"`
	Scope      string                  `json:"scope"`
	Role       string                  `json:"role"`
	IntervalS  float64                 `json:"interval_s"`
	Throughput dashRates               `json:"throughput"` // per second over the last interval
	Totals     dashCounts              `json:"totals"`     // since the page connected
	Instances  []dashInstance          `json:"instances"`
	Lag        []metrics.LagRow        `json:"lag"`
	DLQ        map[string]uint64       `json:"dlq"` // the scope's dead letters by source stream
	Letters    []dashLetter            `json:"letters"`
	Outbox     *dashOutbox             `json:"outbox,omitempty"`
	Latency    []metrics.LatencyRow    `json:"latency"`
	Categories map[string]int64        `json:"categories"`
	Agents     []contract.AgentStats   `json:"agents"`
	Trends     []contract.DayStats     `json:"trends"`
	Overview   *contract.OverviewStats `json:"overview,omitempty"`
	StatsError string                  `json:"stats_error,omitempty"`
}

type dashCounts struct {
	Turns    int64 `json:"turns"`    // turn events published
	Commits  int64 `json:"commits"`  // commit requests published
	Archives int64 `json:"archives"` // archive_created events
	Memories int64 `json:"memories"` // memory_upserted events
}

type dashRates struct {
	Turns    float64 `json:"turns"`
	Commits  float64 `json:"commits"`
	Archives float64 `json:"archives"`
	Memories float64 `json:"memories"`
}

type dashInstance struct {
	Service  string  `json:"service"`
	Instance string  `json:"instance"`
	AgeS     float64 `json:"age_s"` // since its last snapshot arrived
	UptimeS  float64 `json:"uptime_s"`
	Stale    bool    `json:"stale"`
}

type dashOutbox struct {
	Pending    float64 `json:"pending"`
	OldestAgeS float64 `json:"oldest_age_s"`
}

// dashLetter is a dead letter without its payload (which may hold user text).
type dashLetter struct {
	Seq      uint64    `json:"seq"`
	Stream   string    `json:"stream"`
	Reason   string    `json:"reason"`
	Failures int       `json:"failures"`
	At       time.Time `json:"at"`
}

// dashFeed gathers one dashboard connection's figures from the bus: core-NATS subscriptions to
// the metrics snapshots, to the scope's turns, commits, events and dead letters, and the stats
// RPC. An admin's subscriptions name its account in the subject, so another account's
// messages never reach it.
type dashFeed struct {
	s     *Service
	id    identity
	scope string // subject token: the account, or "*"

	mu          sync.Mutex
	snaps       map[string]snapAt // service/instance → latest
	counts      dashCounts
	lastCount   dashCounts
	lastTick    time.Time
	letters     []dashLetter
	stats       dashStats
	lastDLQ     uint64 // the scope's DLQ depth at the last frame
	lettersRead bool
	subs        []*nats.Subscription
}

type snapAt struct {
	snap contract.MetricsSnapshot
	got  time.Time
}

type dashStats struct {
	at         time.Time
	categories map[string]int64
	agents     []contract.AgentStats
	trends     []contract.DayStats
	overview   *contract.OverviewStats
	err        string
}

func (s *Service) newDashFeed(id identity) *dashFeed {
	scope := id.Account
	if id.Role == store.RoleOperator {
		scope = "*"
	}
	return &dashFeed{s: s, id: id, scope: scope, snaps: map[string]snapAt{}, lastTick: s.deps.Now()}
}

// start subscribes; stop must be called after.
func (f *dashFeed) start(ctx context.Context) error {
	p := f.s.deps.Names.Prefix
	sub := func(subject string, h nats.MsgHandler) error {
		sb, err := f.s.deps.NC.Subscribe(subject, h)
		if err != nil {
			return err
		}
		f.subs = append(f.subs, sb)
		return nil
	}
	count := func(field func(c *dashCounts)) nats.MsgHandler {
		return func(*nats.Msg) {
			f.mu.Lock()
			field(&f.counts)
			f.mu.Unlock()
		}
	}
	for subject, h := range map[string]nats.MsgHandler{
		p + ".metrics.>":                 f.onSnapshot,
		p + ".turns." + f.scope + ".*":   count(func(c *dashCounts) { c.Turns++ }),
		p + ".commits." + f.scope + ".*": count(func(c *dashCounts) { c.Commits++ }),
		p + ".events." + contract.EventArchiveCreated + "." + f.scope + ".*": count(func(c *dashCounts) { c.Archives++ }),
		p + ".events." + contract.EventMemoryUpserted + "." + f.scope + ".*": count(func(c *dashCounts) { c.Memories++ }),
	} {
		if err := sub(subject, h); err != nil {
			return err
		}
	}
	if err := f.s.deps.NC.Flush(); err != nil {
		return err
	}
	return nil
}

func (f *dashFeed) stop() {
	for _, sb := range f.subs {
		_ = sb.Unsubscribe()
	}
}

func (f *dashFeed) onSnapshot(m *nats.Msg) {
	var s contract.MetricsSnapshot
	if json.Unmarshal(m.Data, &s) != nil || s.Service == "" {
		return
	}
	f.mu.Lock()
	f.snaps[s.Service+"/"+s.Instance] = snapAt{snap: s, got: f.s.deps.Now()}
	f.mu.Unlock()
}

func letterFrom(seq uint64, h nats.Header, stored time.Time) dashLetter {
	failures, _ := strconv.Atoi(h.Get(contract.HeaderDLQFailures))
	at, err := time.Parse(time.RFC3339Nano, h.Get(contract.HeaderDLQAt))
	if err != nil {
		at = stored
	}
	return dashLetter{Seq: seq, Stream: h.Get(contract.HeaderDLQStream), Reason: h.Get(contract.HeaderDLQReason), Failures: failures, At: at.UTC()}
}

// appendLetter keeps the newest dashMaxLetters, newest first.
func appendLetter(ls []dashLetter, l dashLetter) []dashLetter {
	ls = append([]dashLetter{l}, ls...)
	if len(ls) > dashMaxLetters {
		ls = ls[:dashMaxLetters]
	}
	return ls
}

// loadLetters reads the scope's newest dead letters from the DLQ stream (the last
// dashLetterLookback messages of the stream, headers only).
func (f *dashFeed) loadLetters(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	js := f.s.deps.JS
	name := f.s.deps.Names.Stream(bus.StreamDLQ)
	st, err := js.Stream(ctx, name)
	if err != nil {
		return
	}
	info, err := st.Info(ctx)
	if err != nil || info.State.Msgs == 0 {
		return
	}
	start := uint64(1)
	if info.State.LastSeq > dashLetterLookback {
		start = info.State.LastSeq - dashLetterLookback + 1
	}
	cons, err := js.OrderedConsumer(ctx, name, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{f.s.deps.Names.Prefix + ".dlq.*." + f.scope + ".*"},
		DeliverPolicy:  jetstream.DeliverByStartSequencePolicy, OptStartSeq: start, HeadersOnly: true,
	})
	if err != nil {
		return
	}
	ci, err := cons.Info(ctx)
	if err != nil || ci.NumPending == 0 {
		return
	}
	want := int(min(ci.NumPending, dashLetterLookback))
	var got []dashLetter
	for len(got) < want {
		batch, err := cons.Fetch(want-len(got), jetstream.FetchMaxWait(2*time.Second))
		if err != nil {
			break
		}
		n := 0
		for m := range batch.Messages() {
			n++
			md, _ := m.Metadata()
			var seq uint64
			stored := time.Now()
			if md != nil {
				seq, stored = md.Sequence.Stream, md.Timestamp
			}
			got = append(got, letterFrom(seq, m.Headers(), stored))
		}
		if err := batch.Error(); err != nil && !errors.Is(err, nats.ErrTimeout) || n == 0 {
			break
		}
	}
	var newest []dashLetter
	for _, l := range got { // oldest first: the last ones stay
		newest = appendLetter(newest, l)
	}
	f.mu.Lock()
	f.letters = newest
	f.mu.Unlock()
}

// refreshStats asks recall for the scope's categories, top agents, daily trends and overview
// when the last answer is older than dashStatsEvery.
func (f *dashFeed) refreshStats(ctx context.Context, now time.Time) {
	f.mu.Lock()
	fresh := now.Sub(f.stats.at) < dashStatsEvery
	f.mu.Unlock()
	if fresh {
		return
	}
	all := f.id.Role == store.RoleOperator
	ask := func(kind string, req contract.StatsRequest) (contract.StatsResponse, *request.Error) {
		req.V, req.Kind, req.AllAccounts = contract.Version, kind, all
		var resp contract.StatsResponse
		aerr := f.s.call(ctx, f.id, opStats, f.s.cfg.RPCTimeout, req, &resp)
		return resp, aerr
	}
	st := dashStats{at: now}
	if r, aerr := ask(contract.StatsCategories, contract.StatsRequest{}); aerr != nil {
		st.err = aerr.Message
	} else {
		st.categories = r.Categories
	}
	if r, aerr := ask(contract.StatsAgents, contract.StatsRequest{Limit: dashTopAgents}); aerr == nil {
		st.agents = r.Agents
	}
	if r, aerr := ask(contract.StatsTrends, contract.StatsRequest{Days: dashTrendDays}); aerr == nil {
		st.trends = r.Trends
	}
	if r, aerr := ask(contract.StatsOverview, contract.StatsRequest{}); aerr == nil {
		st.overview = r.Overview
	}
	f.mu.Lock()
	if st.err != "" && f.stats.categories != nil { // keep the last good figures
		f.stats.err, f.stats.at = st.err, now
	} else {
		f.stats = st
	}
	f.mu.Unlock()
}

// frame builds the frame of this tick.
func (f *dashFeed) frame(ctx context.Context) dashFrame {
	now := f.s.deps.Now()
	f.refreshStats(ctx, now)
	dlq, dlqErr := f.dlqDepth(ctx)
	if total := sumDepth(dlq); dlqErr == nil && (total != f.lastDLQ || !f.lettersRead) {
		f.loadLetters(ctx) // the newest letters changed (or were never read)
		f.lastDLQ, f.lettersRead = total, true
	}

	f.mu.Lock()
	defer f.mu.Unlock()
	elapsed := now.Sub(f.lastTick).Seconds()
	if elapsed <= 0 {
		elapsed = 1
	}
	rate := func(now, before int64) float64 { return float64(now-before) / elapsed }
	fr := dashFrame{
		At: now.UTC(), Scope: f.scope, Role: f.id.Role, IntervalS: elapsed,
		Throughput: dashRates{
			Turns:    rate(f.counts.Turns, f.lastCount.Turns),
			Commits:  rate(f.counts.Commits, f.lastCount.Commits),
			Archives: rate(f.counts.Archives, f.lastCount.Archives),
			Memories: rate(f.counts.Memories, f.lastCount.Memories),
		},
		Totals:     f.counts,
		DLQ:        dlq,
		Letters:    append([]dashLetter{}, f.letters...),
		Categories: f.stats.categories,
		Agents:     f.stats.agents,
		Trends:     f.stats.trends,
		Overview:   f.stats.overview,
		StatsError: f.stats.err,
	}
	if dlqErr != nil && fr.StatsError == "" {
		fr.StatsError = "dlq: " + dlqErr.Error()
	}
	f.lastCount, f.lastTick = f.counts, now

	snaps := make([]contract.MetricsSnapshot, 0, len(f.snaps))
	for _, sa := range f.snaps {
		snaps = append(snaps, sa.snap)
		age := now.Sub(sa.got).Seconds()
		fr.Instances = append(fr.Instances, dashInstance{Service: sa.snap.Service, Instance: sa.snap.Instance,
			AgeS: age, UptimeS: sa.snap.UptimeS, Stale: now.Sub(sa.got) > dashStaleAfter})
	}
	sort.Slice(fr.Instances, func(i, j int) bool {
		a, b := fr.Instances[i], fr.Instances[j]
		return a.Service+"/"+a.Instance < b.Service+"/"+b.Instance
	})
	fr.Lag = metrics.ConsumerLag(snaps)
	fr.Latency = metrics.MergeLatencies(snaps, routeDashboardStream)
	if n, ok := metrics.GaugeMax(snaps, "membus_outbox_pending_rows"); ok {
		age, _ := metrics.GaugeMax(snaps, "membus_outbox_oldest_pending_age_seconds")
		fr.Outbox = &dashOutbox{Pending: n, OldestAgeS: age}
	}
	if fr.Categories == nil {
		fr.Categories = map[string]int64{}
	}
	return fr
}

// dlqDepth counts the scope's dead letters by source stream.
func (f *dashFeed) dlqDepth(ctx context.Context) (map[string]uint64, error) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	account := f.scope
	if account == "*" {
		account = ""
	}
	return metrics.DLQDepth(ctx, f.s.deps.JS, f.s.deps.Names, account)
}

func sumDepth(d map[string]uint64) uint64 {
	var n uint64
	for _, v := range d {
		n += v
	}
	return n
}
