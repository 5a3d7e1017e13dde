package benches

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"

	"github.com/membus/membus/pkg/bench"
	"github.com/membus/membus/pkg/store"
	"github.com/membus/membus/services/membus/internal/app"
	"github.com/membus/membus/services/membus/internal/cli"
	"github.com/membus/membus/services/membus/internal/harness"
)

// benchHTTPCmd is the gateway load run of issue 7: many concurrent clients, each with its own
// API key, mixing appends and recalls over HTTP, bounded in time — against an in-process membus
// by default, or with --url and --keys against a running gateway (`membus up` in another
// process, the compose stack). It reports p50/p95/p99 and the error rate (any answer other than 2xx; 429s are
// counted apart, since each key has its own rate limit).
func benchHTTPCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "http", Short: "gateway load: concurrent clients appending and recalling over HTTP", Args: cli.NoArgs}
	fs := cmd.Flags()
	clients := fs.Int("clients", 200, "concurrent clients (one API key, user and session each)")
	dur := fs.Duration("duration", 30*time.Second, "measured time (the run stops by itself)")
	recallShare := fs.Int("recall-percent", 50, "share of requests that are recalls; the rest append a turn")
	perClient := fs.Float64("rate", 10, "requests per second each client sends at most (the gateway limits each key to 20/s)")
	syncMode := fs.String("sync", "always", "JetStream durability of the in-process membus: always or interval")
	url := fs.String("url", "", "load a running gateway instead of an in-process membus (membus up, the compose stack): its base URL")
	keysFile := fs.String("keys", "", "with --url: a file of user API keys, one per line, one per client (membus keys create --count N)")
	asJSON := fs.Bool("json", false, "print docs/design.md §10-style JSON Lines on stdout")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
		return cli.Exit(func() int {
			if *clients <= 0 || *dur <= 0 || *dur > 10*time.Minute || *recallShare < 0 || *recallShare > 100 {
				fmt.Fprintln(stderr, "membus bench http: --clients > 0, 0 < --duration ≤ 10m, 0 ≤ --recall-percent ≤ 100")
				return 2
			}
			if (*url == "") != (*keysFile == "") {
				fmt.Fprintln(stderr, "membus bench http: --url and --keys go together (the keys of the gateway at that URL)")
				return 2
			}
			ctx, stop := app.SignalContext()
			defer stop()
			base, keys, backend := strings.TrimRight(*url, "/"), []string(nil), "external"
			if base != "" {
				var err error
				if keys, err = readKeys(*keysFile, *clients, cmd.Flags().Changed("clients")); err != nil {
					fmt.Fprintf(stderr, "membus bench http: %v\n", err)
					return 2
				}
				*clients = len(keys)
			} else {
				env, closeEnv, err := openBenchEnv(ctx, *syncMode, harness.Backend{}, "load")
				if err != nil {
					fmt.Fprintf(stderr, "membus bench http: %v\n", err)
					return 1
				}
				defer closeEnv()
				base, backend = "http://"+env.Config.HTTPAddr, "embedded"
				keys = make([]string, *clients)
				for i := range keys {
					k, _, err := env.Store.CreateKey(ctx, "load", fmt.Sprintf("user-%d", i), store.RoleUser, "bench http")
					if err != nil {
						fmt.Fprintf(stderr, "membus bench http: %v\n", err)
						return 1
					}
					keys[i] = k
				}
			}
			client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: *clients}}
			var errs, limited atomic.Int64
			var mu sync.Mutex
			status := map[int]int{}
			var lat []time.Duration // request latencies only, without the clients' pacing
			byKind := map[string][]time.Duration{}
			do := func(ctx context.Context, kind, key, method, path string, body any) {
				b, _ := json.Marshal(body)
				req, _ := http.NewRequestWithContext(ctx, method, base+path, bytes.NewReader(b))
				req.Header.Set("Authorization", "Bearer "+key)
				req.Header.Set("Content-Type", "application/json")
				start := time.Now()
				resp, err := client.Do(req)
				if err != nil {
					if ctx.Err() == nil { // a request cut by the end of the run is not an error
						errs.Add(1)
					}
					return
				}
				d := time.Since(start)
				_, _ = io.Copy(io.Discard, resp.Body) // drained for connection reuse; the status is what counts
				resp.Body.Close()
				mu.Lock()
				status[resp.StatusCode]++
				lat = append(lat, d)
				byKind[kind] = append(byKind[kind], d)
				mu.Unlock()
				switch {
				case resp.StatusCode == http.StatusTooManyRequests:
					limited.Add(1)
				case resp.StatusCode >= 300:
					errs.Add(1)
				}
			}
			facts := []string{"I live in Lisbon and work as a nurse.", "My dog is named Rex.", "I love hiking in the Alps.", "We decided to use Postgres for the project."}
			run := harness.RandomHex(4) // a run's sessions are its own, whatever an earlier run left behind
			// Each client paces itself like an agent would, under its key's rate limit.
			next := make([]time.Time, *clients)
			var nextMu sync.Mutex
			gap := time.Duration(float64(time.Second) / *perClient)
			op := func(ctx context.Context, i int) (int, error) {
				c := i % *clients
				nextMu.Lock()
				wait := time.Until(next[c])
				if wait < 0 {
					wait = 0
				}
				next[c] = time.Now().Add(wait + gap)
				nextMu.Unlock()
				select {
				case <-ctx.Done():
					return 0, ctx.Err()
				case <-time.After(wait):
				}
				if (i*7919)%100 < *recallShare { // a fixed, well-spread mix
					do(ctx, "recall", keys[c], "POST", "/v1/recall", map[string]any{"query": "where does the user live and what do they love?"})
				} else {
					do(ctx, "append", keys[c], "POST", fmt.Sprintf("/v1/sessions/load-%s-%d/messages", run, c), map[string]any{"messages": []map[string]any{
						{"role": "user", "content": facts[i%len(facts)], "external_id": fmt.Sprintf("m-%d", i)}}})
				}
				return 1, nil
			}
			var prog io.Writer
			if harness.IsTerminal(stderr) {
				prog = stderr
			}
			res, err := bench.Run(ctx, "http", bench.Options{Duration: *dur, Concurrency: *clients, Progress: prog}, op)
			if err != nil && ctx.Err() == nil {
				fmt.Fprintf(stderr, "membus bench http: %v\n", err)
				return 1
			}
			mu.Lock()
			slices.Sort(lat)
			res.Latencies = lat
			res.Ops = len(lat) + int(errs.Load())
			mu.Unlock()
			res.Backend, res.Size, res.RSSMB = backend, *clients, 0
			if backend == "embedded" {
				res.Sync, res.RSSMB = *syncMode, bench.RSSMB() // an external target's memory is not this process's
			}
			total := float64(max(res.Ops, 1))
			line := res.Line()
			line["error_rate"] = float64(errs.Load()) / total
			line["rate_limited"] = limited.Load()
			line["status"] = status
			kinds := []string{"append", "recall"}
			for _, k := range kinds {
				if l := byKind[k]; len(l) > 0 {
					slices.Sort(l)
					line[k+"_p50_ms"], line[k+"_p99_ms"] = ms(bench.Result{Latencies: l}.Percentile(50)), ms(bench.Result{Latencies: l}.Percentile(99))
				}
			}
			if *asJSON {
				if err := json.NewEncoder(stdout).Encode(line); err != nil {
					fmt.Fprintf(stderr, "membus bench http: %v\n", err)
					return 1
				}
				return 0
			}
			fmt.Fprintf(stdout, "http load on %s: %d clients for %s (%d%% recall), %d requests, %.0f req/s\n", base, *clients, *dur, *recallShare, res.Ops, res.OpsPerSec())
			fmt.Fprintf(stdout, "  latency p50 %.1f ms  p95 %.1f ms  p99 %.1f ms", ms(res.Percentile(50)), ms(res.Percentile(95)), ms(res.Percentile(99)))
			for _, k := range kinds {
				if l := byKind[k]; len(l) > 0 {
					fmt.Fprintf(stdout, "; %s p50 %.1f ms p99 %.1f ms", k, ms(bench.Result{Latencies: l}.Percentile(50)), ms(bench.Result{Latencies: l}.Percentile(99)))
				}
			}
			fmt.Fprintln(stdout)
			fmt.Fprintf(stdout, "  errors %d (%.3f%%), rate-limited %d, statuses %v", errs.Load(), 100*float64(errs.Load())/total, limited.Load(), status)
			if res.RSSMB > 0 {
				fmt.Fprintf(stdout, ", rss %.0f MB", res.RSSMB)
			}
			fmt.Fprintln(stdout)
			return 0
		}())
	}
	return cmd
}

// readKeys reads the API keys of an external run: one per non-empty line, each a different
// user. With --clients given, the file must hold at least that many and the first are used;
// without, every key is a client.
func readKeys(path string, clients int, clientsGiven bool) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--keys: %w", err)
	}
	var keys []string
	for _, line := range strings.Split(string(b), "\n") {
		if k := strings.TrimSpace(line); k != "" {
			keys = append(keys, k)
		}
	}
	switch {
	case len(keys) == 0:
		return nil, fmt.Errorf("--keys %s holds no key; make them with: membus keys create --account load --user load --count %d > %s", path, clients, path)
	case clientsGiven && len(keys) < clients:
		return nil, fmt.Errorf("--keys %s holds %d keys for %d clients (one key per client: each key has its own rate limit); make more with membus keys create --count", path, len(keys), clients)
	case clientsGiven:
		keys = keys[:clients]
	}
	return keys, nil
}
