package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/membus/membus/pkg/bus"
	"github.com/membus/membus/pkg/contract"
)

// soakWords is the soak's whole vocabulary of facts: the memories it can create are bounded,
// so a process whose resources keep growing leaks rather than holds more data.
var soakWords = []string{"hiking", "sailing", "chess", "pottery", "jazz", "sushi", "tango", "origami", "cycling", "baking",
	"astronomy", "kayaking", "gardening", "poetry", "climbing", "fencing", "knitting", "surfing", "opera", "curling"}

// sample is one reading of the process under load.
type sample struct {
	at                    time.Duration
	rssKiB, fds, gorout   int
	cycles, ops, failures int64
}

// soak runs a bounded, steady load against a running membus for --duration and samples the
// process's RSS and open files (/proc/<pid>) and goroutines (go_goroutines of --metrics) every
// --interval. The load is cycles of: a new session's turns over the bus, a synchronous commit,
// recall and context over the bus and HTTP, then the session's erasure, so the data it leaves
// stays bounded, paced at --rate turn events/s. Flat means: for each figure, the median sample
// of the last third is at most the median of the first third (after --warmup) times
// 1+tolerance plus a small absolute slack (--rss-tolerance and 8 MiB, --goroutine-tolerance
// and 10, --fd-slack files); judge says why medians. JetStream keeps every Nats-Msg-Id of the last 10 minutes (the
// streams' dedup window) in memory, so RSS grows with the publish rate while that window
// fills: the pace keeps that growth small, and --warmup past 10 minutes leaves it out.
func soak(args []string) error {
	var c common
	fs := c.flagSet("soak")
	pid := fs.Int("pid", 0, "pid of the membus process to sample")
	metricsURL := fs.String("metrics", "", "its Prometheus /metrics URL (go_goroutines)")
	base := fs.String("http", "", "the gateway's base URL (HTTP recall)")
	key := fs.String("key", "", "an admin API key of --account (HTTP recall names the user)")
	duration := fs.Duration("duration", 10*time.Minute, "how long the load runs")
	interval := fs.Duration("interval", 0, "time between samples (0: duration/40, at least 1s)")
	warmup := fs.Duration("warmup", 0, "samples ignored at the start (0: a sixth of the duration)")
	workers := fs.Int("workers", 3, "concurrent load cycles")
	turns := fs.Int("turns", 8, "turn events per cycle")
	rate := fs.Int("rate", 60, "turn events/s offered by all workers together (0: as fast as they go)")
	rssTol := fs.Float64("rss-tolerance", 0.10, "allowed growth of RSS, last third over first")
	gTol := fs.Float64("goroutine-tolerance", 0.10, "allowed growth of goroutines")
	fdSlack := fs.Int("fd-slack", 8, "allowed growth of open files")
	_ = fs.Parse(args)
	if *pid == 0 || *metricsURL == "" {
		return errors.New("--pid and --metrics are required")
	}
	if *interval == 0 {
		*interval = max(time.Second, *duration/40)
	}
	if *warmup == 0 {
		*warmup = *duration / 6
	}
	nc, js, names, err := connect(c)
	if err != nil {
		return err
	}
	defer nc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), *duration)
	defer cancel()

	var cycles, ops, failures atomic.Int64
	var lastErr atomic.Value
	fail := func(what string, err error) {
		failures.Add(1)
		lastErr.Store(what + ": " + err.Error())
	}
	// pace lets one turn event through at the offered rate.
	pace := func() bool { return ctx.Err() == nil }
	if *rate > 0 {
		t := time.NewTicker(time.Second / time.Duration(*rate))
		defer t.Stop()
		pace = func() bool {
			select {
			case <-t.C:
				return true
			case <-ctx.Done():
				return false
			}
		}
	}
	var wg sync.WaitGroup
	for w := range *workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 11))
			for n := 0; ctx.Err() == nil; n++ {
				soakCycle(ctx, c, names, js, nc, *base, *key, w, n, *turns, r, pace, &ops, fail)
				cycles.Add(1)
			}
		}()
	}

	start := time.Now()
	var samples []sample
	fmt.Printf("%-8s %10s %6s %11s %8s %8s %9s\n", "t", "rss MiB", "fds", "goroutines", "cycles", "ops", "failures")
	read := func() error {
		s := sample{at: time.Since(start).Round(time.Second), cycles: cycles.Load(), ops: ops.Load(), failures: failures.Load()}
		var err error
		if s.rssKiB, err = procRSS(*pid); err != nil {
			return err
		}
		if s.fds, err = procFDs(*pid); err != nil {
			return err
		}
		if s.gorout, err = goroutines(*metricsURL); err != nil {
			return err
		}
		samples = append(samples, s)
		mark := ""
		if s.at < *warmup {
			mark = "  (warm-up)"
		}
		fmt.Printf("%-8s %10.1f %6d %11d %8d %8d %9d%s\n", s.at, float64(s.rssKiB)/1024, s.fds, s.gorout, s.cycles, s.ops, s.failures, mark)
		return nil
	}
	tick := time.NewTicker(*interval)
	defer tick.Stop()
	if err := read(); err != nil {
		return err
	}
	for done := false; !done; {
		select {
		case <-ctx.Done():
			done = true
		case <-tick.C:
			if err := read(); err != nil {
				return fmt.Errorf("sample pid %d: %w (did membus stop?)", *pid, err)
			}
		}
	}
	wg.Wait()
	if err := read(); err != nil {
		return fmt.Errorf("sample pid %d: %w (did membus stop?)", *pid, err)
	}

	var steady []sample
	for _, s := range samples {
		if s.at >= *warmup {
			steady = append(steady, s)
		}
	}
	if len(steady) < 6 {
		return fmt.Errorf("only %d samples after the %v warm-up: run longer or sample more often", len(steady), *warmup)
	}
	third := len(steady) / 3
	first, last := steady[:third], steady[len(steady)-third:]
	type figure struct {
		name    string
		get     func(sample) int
		tol     float64
		slack   int
		unit    float64
		unitStr string
	}
	figures := []figure{
		{"RSS", func(s sample) int { return s.rssKiB }, *rssTol, 8 << 10, 1024, "MiB"},
		{"goroutines", func(s sample) int { return s.gorout }, *gTol, 10, 1, ""},
		{"open files", func(s sample) int { return s.fds }, 0, *fdSlack, 1, ""},
	}
	fmt.Printf("\nflat: median of the last third (%d samples from %v) ≤ median of the first third after the %v warm-up (%d samples) × (1 + tolerance) + slack\n",
		len(last), last[0].at, *warmup, len(first))
	fmt.Printf("%-11s %12s %12s %12s %12s %12s %s\n", "figure", "first median", "last median", "limit", "peaks", "trend/min", "verdict")
	flat := true
	out := map[string]any{"samples": len(samples), "cycles": cycles.Load(), "ops": ops.Load(), "failures": failures.Load()}
	for _, f := range figures {
		v := judge(values(first, f.get), values(last, f.get), f.tol, f.slack)
		verdict := "flat"
		if !v.flat {
			verdict, flat = "GROWING", false
		}
		peaks := fmt.Sprintf("%.0f→%.0f", float64(v.firstPeak)/f.unit, float64(v.lastPeak)/f.unit)
		fmt.Printf("%-11s %12.1f %12.1f %12.1f %12s %+12.2f %s (tolerance %.0f%% + %.0f%s)\n", f.name, float64(v.first)/f.unit, float64(v.last)/f.unit, float64(v.limit)/f.unit,
			peaks, slopePerMinute(steady, f.get)/f.unit, verdict, f.tol*100, float64(f.slack)/f.unit, f.unitStr)
		out[strings.ReplaceAll(f.name, " ", "_")] = map[string]any{"first": v.first, "last": v.last, "limit": v.limit, "first_peak": v.firstPeak, "last_peak": v.lastPeak, "flat": v.flat}
	}
	out["flat"] = flat
	if e, ok := lastErr.Load().(string); ok {
		out["last_failure"] = e
	}
	printJSON(out)
	if cycles.Load() == 0 {
		return errors.New("no load cycle completed: the soak measured an idle process")
	}
	if !flat {
		return errors.New("not flat (table above)")
	}
	return nil
}

// verdict is one figure's flat check: the medians of the first and last thirds, the limit the
// last median must not pass, and the peaks (shown, not judged).
type verdict struct {
	first, last, limit, firstPeak, lastPeak int
	flat                                    bool
}

// judge compares medians, not peaks: a leak lifts the level every later sample sits on, while a
// sample taken as a commit's workers run lifts only itself (a CI run failed the peak rule on one
// 171 among goroutine samples of 136).
func judge(first, last []int, tol float64, slack int) verdict {
	v := verdict{first: median(first), last: median(last), firstPeak: slices.Max(first), lastPeak: slices.Max(last)}
	v.limit = int(float64(v.first)*(1+tol)) + slack
	v.flat = v.last <= v.limit
	return v
}

func median(vs []int) int {
	s := slices.Clone(vs)
	slices.Sort(s)
	return s[len(s)/2]
}

func values(ss []sample, get func(sample) int) []int {
	vs := make([]int, len(ss))
	for i, s := range ss {
		vs[i] = get(s)
	}
	return vs
}

// slopePerMinute is the least-squares trend of a figure over the samples, per minute: shown
// beside the verdict (a long run's slow leak shows there first), not part of the rule.
func slopePerMinute(ss []sample, get func(sample) int) float64 {
	var n, sx, sy, sxx, sxy float64
	for _, s := range ss {
		x, y := s.at.Minutes(), float64(get(s))
		n++
		sx += x
		sy += y
		sxx += x * x
		sxy += x * y
	}
	if d := n*sxx - sx*sx; d != 0 {
		return (n*sxy - sx*sy) / d
	}
	return 0
}

// soakCycle is one unit of the soak's load: turns for a new session, a synchronous commit,
// recall and context, then the session's erasure.
func soakCycle(ctx context.Context, c common, names bus.Names, js jetstream.JetStream, nc *nats.Conn, base, key string, w, n, turns int, r *rand.Rand,
	pace func() bool, ops *atomic.Int64, fail func(string, error)) {
	user := fmt.Sprintf("soak-u%d", w%3)
	sess := fmt.Sprintf("%s-w%d-c%d", c.run, w, n)
	call := func(op string, req, resp any) bool {
		cctx, ccancel := context.WithTimeout(ctx, 60*time.Second)
		defer ccancel()
		if err := bus.Call(cctx, nc, names.RPC(c.account, op), req, resp); err != nil {
			if ctx.Err() == nil {
				fail(op, err)
			}
			return false
		}
		ops.Add(1)
		return true
	}
	for k := range turns {
		if !pace() {
			return
		}
		now := time.Now().UTC()
		text := "Could you tell me more about that, please?"
		if k%2 == 0 {
			text = "I really love " + soakWords[r.IntN(len(soakWords))] + "."
		}
		mid := fmt.Sprintf("%s-m%03d", sess, k)
		ev := contract.TurnEvent{V: 1, EventID: "ev-" + mid, AccountID: c.account, UserID: user, SessionID: sess, Source: "loadtest",
			Messages: []contract.Message{
				{MessageID: mid + "-u", Role: "user", CreatedAt: now, Parts: []contract.Part{{Type: contract.PartText, Text: text}}},
				{MessageID: mid + "-a", Role: "assistant", Position: 1, CreatedAt: now, Parts: []contract.Part{{Type: contract.PartText, Text: "Sure."}}},
			}, SentAt: now}
		pctx, pcancel := context.WithTimeout(ctx, 10*time.Second)
		_, err := bus.PublishJSON(pctx, js, names.Turns(c.account, sess), ev.EventID, ev)
		pcancel()
		if err != nil {
			if ctx.Err() == nil {
				fail("publish", err)
			}
			return
		}
		ops.Add(1)
	}
	var res contract.CommitResult
	if !call("commit", contract.CommitRPCRequest{V: 1, RequestID: "soak-" + sess, UserID: user, SessionID: sess, Kind: contract.CommitSync, Wait: true}, &res) {
		return
	}
	query := soakWords[r.IntN(len(soakWords))]
	var rr contract.RecallResponse
	call("recall", contract.RecallRequest{V: 1, UserID: user, Query: "what does the user love, " + query + "?", Limit: 6}, &rr)
	var cr json.RawMessage
	call("context", contract.ContextRequest{V: 1, UserID: user, SessionID: sess, TokenBudget: 8000}, &cr)
	if base != "" && key != "" {
		b, _ := json.Marshal(map[string]any{"query": "does the user love " + query + "?"})
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/recall", bytes.NewReader(b))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("X-Membus-User", user)
		if resp, err := httpClient.Do(req); err != nil {
			if ctx.Err() == nil {
				fail("http recall", err)
			}
		} else {
			_ = resp.Body.Close()
			if resp.StatusCode >= 500 {
				fail("http recall", fmt.Errorf("status %d", resp.StatusCode))
			} else {
				ops.Add(1)
			}
		}
	}
	var er contract.EraseResult
	call("erase", contract.EraseRequest{V: 1, UserID: user, SessionID: sess}, &er)
}

// procRSS reads VmRSS (KiB) from /proc/<pid>/status.
func procRSS(pid int) (int, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			return strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
		}
	}
	return 0, errors.New("no VmRSS in /proc/<pid>/status")
}

// procFDs counts /proc/<pid>/fd.
func procFDs(pid int) (int, error) {
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	return len(ents), err
}

// goroutines reads go_goroutines from a Prometheus exposition (the highest series: several
// registries of one process each report the same process-wide figure).
func goroutines(u string) (int, error) {
	resp, err := httpClient.Get(u)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	best, found := 0.0, false
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "go_goroutines") {
			continue
		}
		f := strings.Fields(line)
		if v, err := strconv.ParseFloat(f[len(f)-1], 64); err == nil {
			best, found = max(best, v), true
		}
	}
	if !found {
		return 0, fmt.Errorf("no go_goroutines at %s", u)
	}
	return int(best), sc.Err()
}
