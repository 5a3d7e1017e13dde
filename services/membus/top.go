package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/spf13/cobra"

	"github.com/membus/membus/pkg/bus"
	"github.com/membus/membus/pkg/contract"
	"github.com/membus/membus/pkg/metrics"
	"github.com/membus/membus/services/membus/internal/cli"
)

// topStaleAfter marks an instance stale after three missed snapshots (they come every 5 s).
const topStaleAfter = 15 * time.Second

// topAllAccounts is the account token of top's stats RPC: the bus is trusted (whoever holds
// the NATS token is an operator), so top asks across accounts.
const topAllAccounts = "_"

// topCommand shows the dashboard's figures in the terminal, refreshed every --interval, from
// the metrics snapshots on <p>.metrics.> and the stats RPC (across accounts): throughput,
// consumer lag, dead letters, outbox, latencies, memories per category, top agents and the
// health of every instance. --once prints one screen once every service has reported and
// exits. It connects as every command does (app.Dial).
func topCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "top", Short: "the dashboard's figures in the terminal, refreshing", Args: cli.NoArgs}
	every := cmd.Flags().Duration("interval", 2*time.Second, "refresh interval")
	dur := cmd.Flags().Duration("for", 0, "stop after this long (0: until Ctrl-C)")
	once := cmd.Flags().Bool("once", false, "print one screen (after the first snapshots, at most 15 s) and exit")
	plain := cmd.Flags().Bool("plain", false, "do not clear the screen between refreshes")
	load := withConfig(cmd, busFlags...)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		cfg, err := load()
		if err != nil {
			return cli.Usagef("%v", err)
		}
		if *every < 100*time.Millisecond {
			return cli.Usagef("--interval must be at least 100ms")
		}
		ctx, nc, names, done, err := watch(cfg, *dur, "membus-top")
		if err != nil {
			return err
		}
		defer done()
		return runTop(ctx, nc, names, cmd.OutOrStdout(), *every, *once, *plain)
	}
	return cmd
}

// runTop renders until ctx is done (or once).
func runTop(ctx context.Context, nc *nats.Conn, names bus.Names, stdout io.Writer, every time.Duration, once, plain bool) error {
	st := newTopState(time.Now)
	sub, err := nc.Subscribe(names.Prefix+".metrics.>", func(m *nats.Msg) {
		var s contract.MetricsSnapshot
		if json.Unmarshal(m.Data, &s) == nil && s.Service != "" {
			st.add(s)
		}
	})
	if err != nil {
		return err
	}
	defer func() { _ = sub.Unsubscribe() }() // the connection closes right after anyway

	stats := func() {
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		var agents contract.StatsResponse
		err := bus.Call(rctx, nc, names.RPC(topAllAccounts, "stats"),
			contract.StatsRequest{V: contract.Version, Kind: contract.StatsAgents, AllAccounts: true, Limit: 8}, &agents)
		st.setAgents(agents.Agents, err)
	}
	if once {
		// Every service publishes at once on start and then every 5 s: wait for one round.
		deadline := time.Now().Add(15 * time.Second)
		for !st.hasServices("gateway", "ingest", "extract", "recall") && time.Now().Before(deadline) && ctx.Err() == nil {
			time.Sleep(100 * time.Millisecond)
		}
		stats()
		renderTop(stdout, st.view(names.Prefix))
		return nil
	}
	t := time.NewTicker(every)
	defer t.Stop()
	lastStats := time.Time{}
	for {
		if time.Since(lastStats) >= 10*time.Second {
			stats()
			lastStats = time.Now()
		}
		if !plain {
			fmt.Fprint(stdout, "\x1b[H\x1b[2J") // home, clear screen
		}
		renderTop(stdout, st.view(names.Prefix))
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// topState keeps the newest snapshot of every instance and the counter totals of the last
// view, for rates.
type topState struct {
	now func() time.Time

	mu        sync.Mutex
	snaps     map[string]topSnap
	agents    []contract.AgentStats
	agentsErr error
	lastAt    time.Time
	lastTotal map[string]float64
}

type topSnap struct {
	snap contract.MetricsSnapshot
	got  time.Time
}

func newTopState(now func() time.Time) *topState {
	return &topState{now: now, snaps: map[string]topSnap{}}
}

func (s *topState) add(snap contract.MetricsSnapshot) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.snaps[snap.Service+"/"+snap.Instance] = topSnap{snap: snap, got: s.now()}
}

func (s *topState) setAgents(a []contract.AgentStats, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.agents, s.agentsErr = a, err
}

func (s *topState) hasServices(services ...string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, want := range services {
		found := false
		for _, sn := range s.snaps {
			found = found || sn.snap.Service == want
		}
		if !found {
			return false
		}
	}
	return true
}

// topRates are the counters top turns into per-second rates: summed over instances.
var topRates = []struct{ label, counter string }{
	{"messages", "membus_ingest_messages_stored_total"},
	{"commit requests", "membus_ingest_commit_requests_total"},
	{"archives", "membus_extract_archives_total"},
	{"memories", "membus_extract_memories_written_total"},
	{"http requests", "membus_gateway_http_requests_total"},
}

// topView is one screen.
type topView struct {
	Prefix     string
	At         time.Time
	Rates      []topRate
	Lag        []metrics.LagRow
	DLQ        map[string]float64
	Outbox     *[2]float64 // pending rows, oldest age in seconds
	Latency    []metrics.LatencyRow
	Categories map[string]float64
	Agents     []contract.AgentStats
	AgentsErr  error
	Instances  []topInstance
}

type topRate struct {
	Label string
	PerS  float64
	Total float64
}

type topInstance struct {
	Name          string
	Age, Uptime   float64
	Stale         bool
	Service, Inst string
}

func (s *topState) view(prefix string) topView {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	v := topView{Prefix: prefix, At: now, DLQ: map[string]float64{}, Categories: map[string]float64{},
		Agents: s.agents, AgentsErr: s.agentsErr}
	snaps := make([]contract.MetricsSnapshot, 0, len(s.snaps))
	for _, sn := range s.snaps {
		snaps = append(snaps, sn.snap)
		v.Instances = append(v.Instances, topInstance{Name: sn.snap.Service + " / " + sn.snap.Instance,
			Age: now.Sub(sn.got).Seconds(), Uptime: sn.snap.UptimeS, Stale: now.Sub(sn.got) > topStaleAfter})
	}
	sort.Slice(v.Instances, func(i, j int) bool { return v.Instances[i].Name < v.Instances[j].Name })

	totals := map[string]float64{}
	for _, sn := range snaps {
		for key, val := range sn.Counters {
			name, _, ok := metrics.ParseSeriesKey(key)
			if ok {
				totals[name] += val
			}
		}
		for key, val := range sn.Gauges {
			name, labels, ok := metrics.ParseSeriesKey(key)
			switch {
			case !ok:
			case name == "membus_dlq_messages":
				v.DLQ[labels["stream"]] = max(v.DLQ[labels["stream"]], val)
			case name == "membus_memories_active":
				v.Categories[labels["category"]] = max(v.Categories[labels["category"]], val)
			}
		}
	}
	elapsed := now.Sub(s.lastAt).Seconds()
	for _, r := range topRates {
		rate := 0.0
		if s.lastTotal != nil && elapsed > 0 {
			rate = max(0, totals[r.counter]-s.lastTotal[r.counter]) / elapsed
		}
		v.Rates = append(v.Rates, topRate{Label: r.label, PerS: rate, Total: totals[r.counter]})
	}
	s.lastTotal, s.lastAt = totals, now
	v.Lag = metrics.ConsumerLag(snaps)
	v.Latency = metrics.MergeLatencies(snaps, "GET /v1/dashboard/stream")
	if n, ok := metrics.GaugeMax(snaps, "membus_outbox_pending_rows"); ok {
		age, _ := metrics.GaugeMax(snaps, "membus_outbox_oldest_pending_age_seconds")
		v.Outbox = &[2]float64{n, age}
	}
	return v
}

// renderTop prints one screen.
func renderTop(w io.Writer, v topView) {
	stale := 0
	for _, in := range v.Instances {
		if in.Stale {
			stale++
		}
	}
	fmt.Fprintf(w, "membus top · prefix %s · %s · %d instances (%d stale)\n\n", v.Prefix, v.At.UTC().Format("15:04:05 UTC"), len(v.Instances), stale)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	section := func(title string) { fmt.Fprintf(w, "%s\n", title) }
	flush := func() { _ = tw.Flush(); fmt.Fprintln(w) }

	section("THROUGHPUT")
	fmt.Fprintln(tw, "what\tper s\ttotal\t")
	for _, r := range v.Rates {
		fmt.Fprintf(tw, "%s\t%.1f\t%.0f\t\n", r.Label, r.PerS, r.Total)
	}
	flush()

	section("CONSUMER LAG")
	fmt.Fprintln(tw, "consumer\tstream\tpending\tunacked\tredelivered\t")
	if len(v.Lag) == 0 {
		fmt.Fprintln(tw, "(no figures yet: the gateway reports them)\t\t\t\t\t")
	}
	for _, l := range v.Lag {
		fmt.Fprintf(tw, "%s\t%s\t%.0f\t%.0f\t%.0f\t\n", l.Consumer, l.Stream, l.Pending, l.AckPending, l.Redelivered)
	}
	flush()

	section("DEAD LETTERS AND OUTBOX")
	var dlq []string
	for _, k := range sortedKeys(v.DLQ) {
		dlq = append(dlq, fmt.Sprintf("%s %.0f", k, v.DLQ[k]))
	}
	if len(dlq) == 0 {
		dlq = []string{"–"}
	}
	fmt.Fprintf(w, "  dlq: %s\n", strings.Join(dlq, "  "))
	if v.Outbox != nil {
		fmt.Fprintf(w, "  outbox: %.0f pending, oldest %.0f s\n\n", v.Outbox[0], v.Outbox[1])
	} else {
		fmt.Fprintf(w, "  outbox: –\n\n")
	}

	section("LATENCY (ms, since start)")
	fmt.Fprintln(tw, "what\tn\tp50\tp95\tp99\t")
	for _, l := range v.Latency {
		name := l.Name
		if l.Label != "" {
			name += " " + l.Label
		}
		fmt.Fprintf(tw, "%s\t%d\t%.1f\t%.1f\t%.1f\t\n", name, l.Count, l.P50, l.P95, l.P99)
	}
	flush()

	section("MEMORIES BY CATEGORY")
	var cats []string
	for _, k := range sortedKeys(v.Categories) {
		cats = append(cats, fmt.Sprintf("%s %.0f", k, v.Categories[k]))
	}
	if len(cats) == 0 {
		cats = []string{"–"}
	}
	fmt.Fprintf(w, "  %s\n\n", strings.Join(cats, "  "))

	section("TOP AGENTS (all accounts)")
	fmt.Fprintln(tw, "account / agent\tsessions\tmessages\tmemories\t")
	if v.AgentsErr != nil {
		fmt.Fprintf(tw, "(stats unavailable: %v)\t\t\t\t\n", v.AgentsErr)
	}
	for _, a := range v.Agents {
		fmt.Fprintf(tw, "%s / %s\t%d\t%d\t%d\t\n", a.AccountID, a.AgentID, a.Sessions, a.Messages, a.Memories)
	}
	flush()

	section("INSTANCES")
	fmt.Fprintln(tw, "service / instance\tlast snapshot\tuptime\t\t")
	for _, in := range v.Instances {
		mark := "ok"
		if in.Stale {
			mark = "STALE"
		}
		fmt.Fprintf(tw, "%s\t%.0f s ago\t%.0f s\t%s\t\n", in.Name, in.Age, in.Uptime, mark)
	}
	_ = tw.Flush()
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
