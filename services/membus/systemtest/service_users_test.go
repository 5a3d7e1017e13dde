package systemtest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/membus/membus/pkg/bus"
	"github.com/membus/membus/pkg/contract"
	"github.com/membus/membus/pkg/store"
	"github.com/membus/membus/pkg/testenv"
)

// TestDistributedServiceUsers: every service runs as its own process connected as its own
// NATS user with only its permissions (the nats-server runs the generated authorization
// block), ingest handed only its password, not the token. A tenant's API key reaches the bus
// through the gateway's auth callout; its turn goes ingest → commit → extract → recall, the
// summarizer writes the archive's overview, the dashboard feed counts the traffic and sees
// every service's metrics, and erasure purges the streams. The server refuses nothing on the
// way (distDeps checks its log for violations).
func TestDistributedServiceUsers(t *testing.T) {
	d := startDistDeps(t)
	ingestPass, err := bus.ServicePassword(d.token, bus.ServiceIngest)
	if err != nil {
		t.Fatal(err)
	}
	gw := startService(t, d, "gateway", t.TempDir())
	startService(t, d, "ingest", t.TempDir(), "--nats-password", ingestPass)
	startService(t, d, "extract", t.TempDir())
	startService(t, d, "recall", t.TempDir())
	startService(t, d, "summarizer", t.TempDir())
	base := "http://" + gw.httpAddr

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	st, err := store.OpenMySQL(ctx, d.dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = st.Close() }()
	const account, user, session = "acme", "alice", "s-svc"
	adminKey, admin, err := st.CreateKey(ctx, account, "", store.RoleAdmin, "test")
	if err != nil {
		t.Fatal(err)
	}
	userKey, _, err := st.CreateKey(ctx, account, user, store.RoleUser, "test")
	if err != nil {
		t.Fatal(err)
	}
	opsKey, _, err := st.CreateKey(ctx, "ops", "", store.RoleOperator, "test")
	if err != nil {
		t.Fatal(err)
	}
	api := &httpClient{t: t, base: base, key: userKey, hdr: map[string]string{}}
	adminAPI := &httpClient{t: t, base: base, key: adminKey, hdr: map[string]string{}}
	frames := dashStream(t, base, opsKey)

	// The tenant's turn, over the bus with its API key (the gateway answers the callout).
	tn, err := nats.Connect(d.natsURL, nats.Token(adminKey), nats.CustomInboxPrefix(bus.InboxPrefix(admin.ID)), nats.MaxReconnects(0))
	if err != nil {
		t.Fatalf("connect with the API key (the gateway's auth callout): %v", err)
	}
	defer tn.Close()
	tjs, err := jetstream.New(tn)
	if err != nil {
		t.Fatal(err)
	}
	names, err := bus.NewNames(d.prefix)
	if err != nil {
		t.Fatal(err)
	}
	ev := turnEvent(account, user, session, "I live in Boston and I have a dog named Max.", "Nice! Boston is a great city.")
	if _, err := bus.PublishJSON(ctx, tjs, names.Turns(account, session), ev.EventID, ev); err != nil {
		t.Fatalf("the tenant's turn: %v", err)
	}

	// Commit (gateway → extract's RPC, which waits for ingest), recall (gateway → recall).
	var res contract.CommitResult
	api.must(200, "POST", "/v1/sessions/"+session+"/commit", map[string]any{"wait": true, "keep_recent": 0}, &res)
	if res.Status != contract.StatusCompleted || res.ArchiveID == "" {
		t.Fatalf("commit: %+v", res)
	}
	var rec contract.RecallResponse
	api.must(200, "POST", "/v1/recall", map[string]any{"query": "where do I live?"}, &rec)
	if !strings.Contains(rec.Block, "Boston") {
		t.Fatalf("recall: %+v", rec)
	}
	// The summarizer consumed archive_created and wrote the overview (its relay publishes the
	// event that marks the archive summarized).
	testenv.Eventually(t, 60*time.Second, 200*time.Millisecond, func() error {
		a, err := st.GetArchive(ctx, account, res.ArchiveID)
		if err != nil {
			return err
		}
		if a.State != store.StateSummarized {
			return fmt.Errorf("archive %s is %s, want %s", a.ID, a.State, store.StateSummarized)
		}
		return nil
	})
	// The summary RPC answers (a missing digest is a 404 from the summarizer, not a 503).
	if code, body, _ := api.do("GET", "/v1/summaries?period=day&date=2026-11-01", nil); code != 200 && code != 404 {
		t.Fatalf("GET /v1/summaries = %d %s", code, body)
	}

	// The dashboard feed: the gateway's user reads the traffic and every service's metrics.
	waitFrame(t, frames, "the turn, the commit and every service's metrics", func(f dashFrame) bool {
		seen := map[string]bool{}
		for _, in := range f.Instances {
			seen[in.Service] = true
		}
		for _, svc := range bus.Services {
			if !seen[svc] {
				return false
			}
		}
		return f.Totals.Turns >= 1 && f.Totals.Commits >= 1 && len(f.Lag) > 0
	})

	// Every outbox row was relayed: each service's relay publishes the kinds it writes. (Before
	// the erasure, which deletes the erased sessions' unsent rows.)
	testenv.Eventually(t, 30*time.Second, 100*time.Millisecond, func() error {
		if n, err := st.OutboxPending(ctx); err != nil || n != 0 {
			return fmt.Errorf("%d outbox rows unpublished (%w)", n, err)
		}
		return nil
	})

	// Erasure: recall's user securely deletes the user's messages from the streams.
	adminAPI.must(200, "DELETE", "/v1/users/"+user, nil, nil)
	api.must(200, "POST", "/v1/recall", map[string]any{"query": "where do I live?"}, &rec)
	if strings.Contains(rec.Block, "Boston") {
		t.Fatalf("recall after erasure still finds the erased memory: %s", rec.Block)
	}
	js, err := jetstream.New(d.opsConn(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{bus.StreamTurns, bus.StreamCommits, bus.StreamEvents} {
		s, err := js.Stream(ctx, names.Stream(kind))
		if err != nil {
			t.Fatal(err)
		}
		subject := names.Turns(account, session)
		switch kind {
		case bus.StreamCommits:
			subject = names.Commits(account, session)
		case bus.StreamEvents:
			subject = names.Event("*", account, session)
		}
		if _, err := s.GetMsg(ctx, 1, jetstream.WithGetMsgSubject(subject)); !errors.Is(err, jetstream.ErrMsgNotFound) {
			t.Errorf("%s still holds a message on %s after erasure (%v)", kind, subject, err)
		}
	}
}

// dashFrame is what this test reads of a dashboard frame.
type dashFrame struct {
	Totals struct {
		Turns   int64 `json:"turns"`
		Commits int64 `json:"commits"`
	} `json:"totals"`
	Instances []struct {
		Service string `json:"service"`
	} `json:"instances"`
	Lag []struct {
		Consumer string `json:"consumer"`
	} `json:"lag"`
}

// dashStream opens the dashboard's event stream with key and returns its frames.
func dashStream(t *testing.T, base, key string) <-chan dashFrame {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, "GET", base+"/v1/dashboard/stream?interval_ms=500", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != 200 {
		t.Fatalf("GET /v1/dashboard/stream = %d", resp.StatusCode)
	}
	frames := make(chan dashFrame, 64)
	go func() {
		defer close(frames)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			var f dashFrame
			if json.Unmarshal([]byte(data), &f) != nil {
				continue
			}
			select {
			case frames <- f:
			default: // the test reads only the newest frames
			}
		}
	}()
	return frames
}

// waitFrame waits up to 30 s for a frame that satisfies ok.
func waitFrame(t *testing.T, frames <-chan dashFrame, what string, ok func(dashFrame) bool) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	var last dashFrame
	for {
		select {
		case f, open := <-frames:
			if !open {
				t.Fatalf("the dashboard stream ended before %s; last frame %+v", what, last)
			}
			last = f
			if ok(f) {
				return
			}
		case <-deadline:
			t.Fatalf("no dashboard frame with %s within 30 s; last frame %+v", what, last)
		}
	}
}
