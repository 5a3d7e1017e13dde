package systemtest

import (
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
	"github.com/membus/membus/pkg/metrics"
	"github.com/membus/membus/pkg/store"
	"github.com/membus/membus/pkg/testenv"
)

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
	testenv.Eventually(t, 30*time.Second, 200*time.Millisecond, func() error {
		fams, err := metrics.ParseExposition(strings.NewReader(scrape()))
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
		pending := info.NumPending
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
			return nil
		}
		return fmt.Errorf("/metrics does not match the server: lag %v vs num_pending %d, dlq %v vs %d, outbox %v vs %d", lag, pending, dlq, depth["turns"], backlog, sqlBacklog)
	})

	// The real command, as an operator runs it.
	stdout, stderr, code := runCLI(t, "top", "--once", "--nats-url", env.NATSURL, "--nats-token", env.Config.NATSToken)
	if code != 0 {
		t.Fatalf("membus top exited %d: %s", code, stderr)
	}
	screen := stdout
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
