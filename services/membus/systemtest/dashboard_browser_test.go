package systemtest

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/membus/membus/pkg/bus"
	"github.com/membus/membus/pkg/contract"
	"github.com/membus/membus/pkg/store"
	"github.com/membus/membus/pkg/testenv"
)

// chromiumPath finds Debian's chromium (MEMBUS_CHROMIUM, else on PATH). Outside CI a missing
// browser skips the test naming the fix; in CI it fails.
func chromiumPath(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("MEMBUS_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	const fix = "no chromium for the dashboard's browser test: run `bash scripts/chromium.sh` (apt-get install chromium) or set MEMBUS_CHROMIUM"
	if testenv.InCI() {
		t.Fatal(fix)
	}
	t.Skip(fix)
	return ""
}

// browser starts headless chromium as CI runs it (root, no network but loopback) and returns a
// context for its first tab.
func browser(ctx context.Context, t *testing.T) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromiumPath(t)),
		chromedp.NoSandbox, chromedp.Headless, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 1600),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	t.Cleanup(cancelAlloc)
	bctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(cancel)
	if err := chromedp.Do(bctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return bctx
}

// panels is what the dashboard shows, read from the page's DOM as a person would read it.
type panels struct {
	Scope      string `json:"scope"`
	Status     string `json:"status"`
	Error      string `json:"error"`
	Visible    bool   `json:"visible"`
	Turns      string `json:"turns"`
	TurnRate   string `json:"turn_rate"`
	Commits    string `json:"commits"`
	Archives   string `json:"archives"`
	Lag        string `json:"lag"`
	Outbox     string `json:"outbox"`
	Latency    string `json:"latency"`
	DLQ        string `json:"dlq"`
	Letters    string `json:"letters"`
	Categories string `json:"categories"`
	Trends     int    `json:"trends"` // bars drawn
	Agents     string `json:"agents"`
	Instances  string `json:"instances"`
	InstRows   int    `json:"inst_rows"`
	LivePaths  int    `json:"live_paths"`
	Body       string `json:"body"`
}

const readPanels = `(() => {
  const t = (id) => (document.getElementById(id) || {}).textContent || "";
  const main = document.getElementById("panels");
  return {
    scope: t("scope"), status: t("status"), error: t("error"), visible: !main.hidden,
    turns: t("tot-turns"), turn_rate: t("tp-turns"), commits: t("tot-commits"), archives: t("tot-archives"),
    lag: t("lag"), outbox: t("outbox"), latency: t("latency"), dlq: t("dlq"), letters: t("letters"),
    categories: t("categories"), trends: document.querySelectorAll("#trends rect").length,
    agents: t("agents"), instances: t("instances"),
    inst_rows: document.querySelectorAll("#instances tr td.fresh, #instances tr td.stale").length,
    live_paths: document.querySelectorAll("#trend-live path").length,
    body: document.body.innerText,
  };
})()`

// waitPanels polls the page until ok accepts what it shows.
func waitPanels(tab context.Context, t *testing.T, what string, ok func(panels) bool) panels {
	t.Helper()
	var p panels
	testenv.Eventually(t, 45*time.Second, 250*time.Millisecond, func() error {
		var err error
		if p, err = chromedp.Run(tab, chromedp.Evaluate[panels](readPanels)); err != nil {
			t.Fatalf("read the dashboard: %v", err)
		}
		if !ok(p) {
			return fmt.Errorf("the dashboard does not show %s; it shows:\n%s", what, p.Body)
		}
		return nil
	})
	return p
}

func number(s string) int {
	n, _ := strconv.Atoi(strings.ReplaceAll(strings.TrimSpace(s), ",", ""))
	return n
}

// TestDashboardInABrowser starts the whole system as `membus up` does, drives load through the
// HTTP API for two accounts, and reads the dashboard in headless Chromium: every panel shows
// live figures that move with the load, an admin of acme sees nothing of globex, and a user
// key is refused. It saves screenshots (desktop and phone width) and prints their paths.
func TestDashboardInABrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the whole system and a browser")
	}
	chromiumPath(t) // skip (or fail in CI) before starting anything
	env, base := startEmbedded(t, t.TempDir())
	acme := newClient(t, env, base, "acme", "alice", store.RoleUser)
	globex := newClient(t, env, base, "globex", "gary", store.RoleUser)
	acmeAdmin := newClient(t, env, base, "acme", "", store.RoleAdmin)
	operator := newClient(t, env, base, "ops", "", store.RoleOperator)

	turn := func(c *httpClient, agent, session string, texts ...string) {
		t.Helper()
		var msgs []map[string]any
		for i, tx := range texts {
			role := []string{"user", "assistant"}[i%2]
			msgs = append(msgs, map[string]any{"role": role, "content": tx, "external_id": fmt.Sprintf("%s-%d-%d", session, time.Now().UnixNano(), i)})
		}
		c.must(202, "POST", "/v1/sessions/"+session+"/messages", map[string]any{"agent_id": agent, "messages": msgs}, nil)
	}
	commit := func(c *httpClient, agent, session string) {
		t.Helper()
		var res contract.CommitResult
		c.must(200, "POST", "/v1/sessions/"+session+"/commit", map[string]any{"wait": true, "keep_recent": 0, "agent_id": agent}, &res)
	}
	recall := func(c *httpClient, q string) {
		t.Helper()
		c.must(200, "POST", "/v1/recall", map[string]any{"query": q}, nil)
	}
	deadLetter := func(account, session string) {
		t.Helper()
		// A turn that is not JSON: ingest rejects it permanently and dead-letters it.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := env.JS.Publish(ctx, env.Names.Turns(account, session), []byte("not json")); err != nil {
			t.Fatal(err)
		}
	}

	// A durable consumer nobody fetches from: the lag panel shows a backlog that grows with the
	// events of the load.
	{
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := env.JS.CreateOrUpdateConsumer(ctx, env.Names.Stream(bus.StreamEvents), jetstream.ConsumerConfig{
			Durable: env.Names.Consumer("idle-observer"), AckPolicy: jetstream.AckExplicitPolicy})
		cancel()
		if err != nil {
			t.Fatal(err)
		}
	}

	// Load before the page opens: both accounts, commits (archives, memories), recalls, letters.
	turn(acme, "acme-helper", "a-1", "I live in Boston and I have a dog named Max.", "Nice, Boston is lovely.",
		"I prefer black coffee in the morning.")
	commit(acme, "acme-helper", "a-1")
	turn(globex, "globex-secret-agent", "g-1", "My favourite colour is teal and I work at Globex.", "Noted.",
		"I always take the train to work.")
	commit(globex, "globex-secret-agent", "g-1")
	recall(acme, "where do I live and what do I drink")
	recall(globex, "what colour do I like")
	deadLetter("acme", "a-bad")
	deadLetter("globex", "g-bad-1")
	deadLetter("globex", "g-bad-2")

	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	tab := browser(ctx, t)
	if err := chromedp.Do(tab, chromedp.Navigate(base+"/dashboard?interval_ms=500#key="+acmeAdmin.key)); err != nil {
		t.Fatal(err)
	}

	first := waitPanels(tab, t, "every panel filled for acme", func(p panels) bool {
		return p.Visible && strings.Contains(p.Status, "live") &&
			p.InstRows >= 5 && // gateway, ingest, extract, recall, summarizer
			strings.Contains(p.Lag, "ingest · turns") && regexp.MustCompile(`observer · events\s*[1-9]`).MatchString(p.Lag) &&
			strings.Contains(p.Latency, "recall") && strings.Contains(p.Latency, "commit") &&
			strings.Contains(p.DLQ, "1turns") && strings.Contains(p.Letters, "decode") &&
			p.Categories != "" && !strings.Contains(p.Categories, "no memories") &&
			strings.Contains(p.Agents, "acme-helper") && p.Trends > 0 && p.Outbox != "–"
	})
	if !strings.Contains(first.Scope, "account acme") {
		t.Errorf("scope badge = %q", first.Scope)
	}
	if strings.Contains(strings.ToLower(first.Body), "globex") {
		t.Errorf("acme's admin sees globex:\n%s", first.Body)
	}

	// More load for acme only: the totals, the throughput trend and the latency counts move.
	turnsBefore := number(first.Turns)
	for i := range 6 {
		turn(acme, "acme-helper", "a-2", fmt.Sprintf("Turn %d: I am planning a trip to Lisbon in May.", i))
		recall(acme, "trip plans")
	}
	commit(acme, "acme-helper", "a-2")
	turn(globex, "globex-secret-agent", "g-2", "globex load the acme admin must not count")
	later := waitPanels(tab, t, "the new turns and the commit counted", func(p panels) bool {
		return number(p.Turns) >= turnsBefore+6 && number(p.Commits) >= 1 && number(p.Archives) >= 1 && p.LivePaths >= 2 &&
			p.Latency != first.Latency // the next snapshots (every 5 s) carry the new recalls
	})
	if got := number(later.Turns); got != turnsBefore+6 {
		t.Errorf("turns seen = %d, want %d (acme's 6 new ones, none of globex's)", got, turnsBefore+6)
	}
	if strings.Contains(strings.ToLower(later.Body), "globex") {
		t.Errorf("acme's admin sees globex:\n%s", later.Body)
	}

	// Screenshots, desktop then phone width.
	dir := os.Getenv("MEMBUS_SCREENSHOT_DIR")
	if dir == "" {
		dir = t.TempDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	shot := func(name string, actions ...chromedp.Action[chromedp.Void]) string {
		t.Helper()
		if err := chromedp.Do(tab, append(actions, chromedp.Sleep(700*time.Millisecond))...); err != nil {
			t.Fatal(err)
		}
		png, err := chromedp.Run(tab, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("dashboard screenshot: %s", path)
		fmt.Fprintf(os.Stderr, "dashboard screenshot: %s\n", path)
		return path
	}
	// Screenshots are taken under load, so the throughput shows it.
	stopLoad, loadDone := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(loadDone)
		for i := 0; ; i++ {
			select {
			case <-stopLoad:
				return
			case <-time.After(150 * time.Millisecond):
			}
			body := fmt.Sprintf(`{"agent_id":"acme-helper","messages":[{"role":"user","content":"Load turn %d: the trip to Lisbon is in May."}]}`, i)
			req, _ := http.NewRequest("POST", base+"/v1/sessions/a-3/messages", strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+acme.key)
			if resp, err := http.DefaultClient.Do(req); err == nil {
				resp.Body.Close()
			}
		}
	}()
	waitPanels(tab, t, "turns per second under load", func(p panels) bool { return p.TurnRate != "0.0" && p.TurnRate != "0" })
	shot("dashboard-desktop.png")
	shot("dashboard-phone.png", chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2)))
	close(stopLoad)
	<-loadDone

	// A user key is refused: a fresh tab (its own sessionStorage) with alice's key.
	userTab, cancelUser := chromedp.NewContext(tab)
	defer cancelUser()
	if err := chromedp.Do(userTab, chromedp.Navigate(base+"/dashboard#key="+acme.key)); err != nil {
		t.Fatal(err)
	}
	refused := waitPanels(userTab, t, "the user key refused", func(p panels) bool { return strings.Contains(p.Status, "refused") })
	if refused.Visible || !strings.Contains(refused.Error, "403") || strings.Contains(refused.Body, "acme-helper") {
		t.Errorf("user key: panels visible %v, error %q", refused.Visible, refused.Error)
	}

	// An operator sees every account.
	opTab, cancelOp := chromedp.NewContext(tab)
	defer cancelOp()
	if err := chromedp.Do(opTab, chromedp.Navigate(base+"/dashboard?interval_ms=500#key="+operator.key)); err != nil {
		t.Fatal(err)
	}
	op := waitPanels(opTab, t, "both accounts for the operator", func(p panels) bool {
		return strings.Contains(p.Agents, "globex-secret-agent") && strings.Contains(p.Agents, "acme-helper") && strings.Contains(p.DLQ, "3turns")
	})
	if !strings.Contains(op.Scope, "all accounts") {
		t.Errorf("operator scope = %q", op.Scope)
	}
}
