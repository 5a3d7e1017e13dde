package gateway_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"github.com/membus/membus/pkg/bus"
	"github.com/membus/membus/pkg/contract"
	"github.com/membus/membus/pkg/testenv"
)

// frame is the part of a dashboard frame the tests read.
type frame struct {
	Scope  string `json:"scope"`
	Totals struct {
		Turns   int64 `json:"turns"`
		Commits int64 `json:"commits"`
	} `json:"totals"`
	DLQ     map[string]uint64 `json:"dlq"`
	Letters []struct {
		Reason string `json:"reason"`
		Stream string `json:"stream"`
	} `json:"letters"`
	Categories map[string]int64 `json:"categories"`
	Instances  []struct {
		Service  string `json:"service"`
		Instance string `json:"instance"`
	} `json:"instances"`
	Lag []struct {
		Consumer string  `json:"consumer"`
		Pending  float64 `json:"pending"`
	} `json:"lag"`
	Latency []struct {
		Name  string `json:"name"`
		Label string `json:"label"`
		Count int64  `json:"count"`
	} `json:"latency"`
}

// openStream opens the dashboard stream with key and returns its frames (and the raw JSON).
func openStream(t *testing.T, base, key string) (<-chan frame, *http.Response) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, "GET", base+"/v1/dashboard/stream?interval_ms=200", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	frames := make(chan frame, 64)
	if resp.StatusCode != 200 {
		close(frames)
		return frames, resp
	}
	go func() {
		defer close(frames)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			var f frame
			if json.Unmarshal([]byte(data), &f) == nil {
				select {
				case frames <- f:
				default: // the test reads the newest only
				}
			}
		}
	}()
	return frames, resp
}

// waitFrame reads frames until ok accepts one.
func waitFrame(t *testing.T, frames <-chan frame, what string, ok func(frame) bool) frame {
	t.Helper()
	deadline := time.After(10 * time.Second)
	var last frame
	for {
		select {
		case f, open := <-frames:
			if !open {
				t.Fatalf("stream ended before %s; last frame %+v", what, last)
			}
			last = f
			if ok(f) {
				return f
			}
		case <-deadline:
			t.Fatalf("no frame with %s within 10 s; last frame %+v", what, last)
		}
	}
}

func TestDashboardStream(t *testing.T) {
	e := newEnv(t)
	srv := httptest.NewServer(e.svc.Handler())
	t.Cleanup(srv.Close)
	// recall's stats RPC: each account answers its own categories; all accounts the sum.
	e.serve("stats", func(req micro.Request) {
		var sr contract.StatsRequest
		_ = json.Unmarshal(req.Data(), &sr)
		account := strings.Split(req.Subject(), ".")[2]
		cats := map[string]map[string]int64{"acme": {"preference": 4}, "globex": {"globex_secret_category": 9}}[account]
		if sr.AllAccounts {
			cats = map[string]int64{"preference": 4, "globex_secret_category": 9}
		}
		_ = bus.RespondJSON(req, contract.StatsResponse{V: 1, Kind: sr.Kind, Account: account, Categories: cats})
	})

	t.Run("the page loads without a key, with its CSP", func(t *testing.T) {
		resp, err := http.Get(srv.URL + "/dashboard")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") ||
			!strings.Contains(resp.Header.Get("Content-Security-Policy"), "connect-src 'self'") {
			t.Errorf("GET /dashboard = %d %q csp %q", resp.StatusCode, resp.Header.Get("Content-Type"), resp.Header.Get("Content-Security-Policy"))
		}
	})
	t.Run("a user key is refused", func(t *testing.T) {
		_, resp := openStream(t, srv.URL, e.userKey)
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("user key: %d, want 403", resp.StatusCode)
		}
	})
	t.Run("no key is 401", func(t *testing.T) {
		_, resp := openStream(t, srv.URL, "")
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("no key: %d, want 401", resp.StatusCode)
		}
	})

	admin, resp := openStream(t, srv.URL, e.adminKey)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("admin: %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	operator, _ := openStream(t, srv.URL, e.operatorKey)
	waitFrame(t, admin, "a first frame", func(frame) bool { return true })
	waitFrame(t, operator, "a first frame", func(frame) bool { return true })

	ctx := context.Background()
	publish := func(subject string, hdr nats.Header) {
		t.Helper()
		if _, err := e.js.PublishMsg(ctx, &nats.Msg{Subject: subject, Data: []byte(`{}`), Header: hdr}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 3 {
		publish(e.names.Turns("acme", fmt.Sprint("s", i)), nil)
	}
	for i := range 5 {
		publish(e.names.Turns("globex", fmt.Sprint("g", i)), nil)
	}
	letter := func(account, reason string) nats.Header {
		return nats.Header{contract.HeaderDLQReason: {reason}, contract.HeaderDLQStream: {"turns"}, contract.HeaderDLQFailures: {"5"}}
	}
	publish(e.names.DLQ("turns", "acme", "s1"), letter("acme", "acme: bad turn"))
	publish(e.names.DLQ("turns", "globex", "g1"), letter("globex", "globex-secret-reason"))
	snap := contract.MetricsSnapshot{V: 1, Service: "gateway", Instance: "gw-1", At: time.Now(), UptimeS: 3,
		Counters: map[string]float64{},
		Gauges: map[string]float64{
			`membus_jetstream_consumer_pending_messages{consumer="membus-ingest",stream="MEMBUS_TURNS"}`: 42,
			"membus_outbox_pending_rows": 2,
		},
		Latencies: map[string]contract.LatencyMS{`membus_recall_duration_seconds{outcome="degraded"}`: {Count: 7, P50: 1, P95: 2, P99: 3}}}
	data, _ := json.Marshal(snap)
	if err := e.nc.Publish(e.names.Metrics("gateway", "gw-1"), data); err != nil {
		t.Fatal(err)
	}

	t.Run("an admin sees its account and nothing of another", func(t *testing.T) {
		f := waitFrame(t, admin, "acme's turns, letter and categories", func(f frame) bool {
			return f.Totals.Turns == 3 && len(f.Letters) == 1 && f.Categories["preference"] == 4 && len(f.Instances) == 1
		})
		if f.Scope != "acme" || f.DLQ["turns"] != 1 || f.Letters[0].Reason != "acme: bad turn" {
			t.Errorf("admin frame = %+v", f)
		}
		raw, _ := json.Marshal(f)
		for _, leak := range []string{"globex", "g1"} {
			if strings.Contains(string(raw), leak) {
				t.Errorf("admin frame names %q: %s", leak, raw)
			}
		}
		if len(f.Lag) != 1 || f.Lag[0].Pending != 42 {
			t.Errorf("consumer lag from the snapshot = %+v", f.Lag)
		}
		if len(f.Latency) != 1 || f.Latency[0].Label != "degraded" || f.Latency[0].Count != 7 {
			t.Errorf("latency = %+v", f.Latency)
		}
	})
	t.Run("an operator sees every account", func(t *testing.T) {
		f := waitFrame(t, operator, "every turn and letter", func(f frame) bool {
			return f.Totals.Turns == 8 && len(f.Letters) == 2 && f.DLQ["turns"] == 2 && f.Categories["globex_secret_category"] == 9
		})
		if f.Scope != "*" {
			t.Errorf("operator scope = %q", f.Scope)
		}
	})
	t.Run("a bad interval is 400", func(t *testing.T) {
		rec := e.do("GET", "/v1/dashboard/stream?interval_ms=5", nil, bearer(e.adminKey))
		if rec.Code != 400 {
			t.Errorf("interval_ms=5: %d", rec.Code)
		}
	})
}

// TestDashboardStreamEndsOnShutdown: an open dashboard stream must not hold the gateway's
// graceful shutdown until its timeout.
func TestDashboardStreamEndsOnShutdown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	e := newEnv(t, func(s *setup) { s.cfg.Addr = addr })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.svc.Run(ctx) }()
	var frames <-chan frame
	testenv.Eventually(t, 5*time.Second, 20*time.Millisecond, func() error {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			return fmt.Errorf("gateway does not listen: %w", err)
		}
		return c.Close()
	})
	frames, _ = openStream(t, "http://"+addr, e.operatorKey)
	waitFrame(t, frames, "a first frame", func(frame) bool { return true })

	start := time.Now()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run = %v", err)
		}
	case <-time.After(8 * time.Second): // the shutdown timeout is 10 s
		t.Fatal("Run waited for the open dashboard stream")
	}
	for range frames { // the stream ends
	}
	t.Logf("shut down in %v with a stream open", time.Since(start).Round(time.Millisecond))
}
