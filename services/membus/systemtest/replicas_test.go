package systemtest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/membus/membus/pkg/bus"
	"github.com/membus/membus/pkg/config"
	"github.com/membus/membus/pkg/contract"
	"github.com/membus/membus/pkg/store"
	"github.com/membus/membus/pkg/testenv"
	"github.com/membus/membus/services/membus/internal/app"
)

// startIngestReplica runs one ingest replica (the ingest service and the outbox relay, as
// `membus ingest` does, connected as the ingest service's own NATS user) in a process environment of its own against the shared servers: its
// own NATS connection, SQL pool and Redis client, one of the consumers of the shared durable.
func startIngestReplica(t *testing.T, d distDeps, instance string) *app.Env {
	t.Helper()
	cfg := config.Defaults()
	cfg.DataDir = t.TempDir()
	cfg.NATSURL = d.natsURL
	cfg.NATSToken = d.token
	cfg.MySQLDSN = d.dsn
	cfg.RedisURL = d.redisURL
	cfg.SubjectPrefix = d.prefix
	cfg.InstanceID = instance
	ctx, cancel := context.WithCancel(context.Background())
	env, err := app.OpenService(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), "ingest")
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if env.Server != nil || env.Store.Dialect() != store.MySQL || env.Redis == nil {
		cancel()
		env.Close()
		t.Fatalf("replica %s is not distributed: embedded NATS %v, SQL %s, Redis %v", instance, env.Server != nil, env.Store.Dialect(), env.Redis != nil)
	}
	svc, err := app.Ingest(env)
	if err != nil {
		cancel()
		env.Close()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- env.RunAll(ctx, svc) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("replica %s: %v", instance, err)
			}
		case <-time.After(30 * time.Second):
			t.Errorf("replica %s did not drain within 30 s", instance)
		}
		env.Close()
	})
	return env
}

// counterValue reads a counter's total from a replica's /metrics.
func counterValue(t *testing.T, env *app.Env, name string) float64 {
	t.Helper()
	rec := httptest.NewRecorder()
	env.MetricsHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	var total float64
	for _, line := range strings.Split(rec.Body.String(), "\n") {
		if !strings.HasPrefix(line, name+" ") && !strings.HasPrefix(line, name+"{") {
			continue
		}
		f := strings.Fields(line)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err != nil {
			t.Fatalf("metric line %q: %v", line, err)
		}
		total += v
	}
	return total
}

// TestThreeIngestReplicas: three ingest replicas — three processes' worth of environments
// against one standalone nats-server, MariaDB and Redis — share the ingest durable consumer
// over 10,000 turn events from 50 sessions (one in ten also delivered a second time under
// another Nats-Msg-Id) with the minimum commit threshold, so every session crosses it many
// times while the replicas race on its row. Every message is stored exactly once with a gap-free
// seq; every crossing of the threshold yields exactly one CommitRequest (in the outbox and on
// <p>.commits.>), each one a real crossing, none missed; and every replica did part of the work.
func TestThreeIngestReplicas(t *testing.T) {
	d := startDistDeps(t)
	replicas := []*app.Env{
		startIngestReplica(t, d, "ingest-a"),
		startIngestReplica(t, d, "ingest-b"),
		startIngestReplica(t, d, "ingest-c"),
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	const (
		sessions = 50
		events   = 10000
		perEvent = 2
		account  = "acme"
	)
	threshold := contract.MinCommitTokenThreshold
	pub := replicas[0]
	// The turns come from a client of the bus (here the operator's user): ingest's own user
	// may consume turns but not publish them.
	pubJS, err := jetstream.New(d.opsConn(t), jetstream.WithPublishAsyncMaxPending(512))
	if err != nil {
		t.Fatal(err)
	}
	filler := "we compared the train and the ferry to Lisbon, the hotel near the river and the museum hours"
	at := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	var futures []jetstream.PubAckFuture
	for e := 0; e < events; e++ {
		s := e % sessions
		session := fmt.Sprintf("s-%02d", s)
		ev := contract.TurnEvent{V: 1, EventID: fmt.Sprintf("%s-e%d", session, e), AccountID: account, UserID: "u1", AgentID: "main",
			SessionID: session, Source: "test", SentAt: at}
		ev.Turn.CommitTokenThreshold = &threshold
		for j := 0; j < perEvent; j++ {
			role := contract.RoleUser
			if j == 1 {
				role = contract.RoleAssistant
			}
			// Lengths vary with e, so crossings fall at different points in each session.
			text := fmt.Sprintf("turn %d part %d: %s. %s", e, j, filler, strings.Repeat("and more ", (e*7+j)%13))
			ev.Messages = append(ev.Messages, contract.Message{MessageID: fmt.Sprintf("e%d-m%d", e, j), Position: j, Role: role,
				Parts: []contract.Part{{Type: contract.PartText, Text: text}}, CreatedAt: at.Add(time.Duration(e) * time.Second)})
		}
		data, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		subj := pub.Names.Turns(account, session)
		ids := []string{ev.EventID}
		if e%10 == 3 {
			ids = append(ids, ev.EventID+"-again") // a redelivery the stream does not deduplicate
		}
		for _, id := range ids {
			f, err := pubJS.PublishMsgAsync(&nats.Msg{Subject: subj, Data: data}, jetstream.WithMsgID(id), jetstream.WithStallWait(time.Minute))
			if err != nil {
				t.Fatal(err)
			}
			futures = append(futures, f)
		}
	}
	select {
	case <-pubJS.PublishAsyncComplete():
	case <-ctx.Done():
		t.Fatal("publishes not acknowledged in time")
	}
	for _, f := range futures {
		select {
		case <-f.Ok():
		case err := <-f.Err():
			t.Fatal(err)
		}
	}

	// Wait until every message is stored and every queued commit request is published.
	db := pub.Store.DB()
	want := events * perEvent
	end, _ := ctx.Deadline()
	testenv.Eventually(t, time.Until(end), 50*time.Millisecond, func() error {
		var stored, pending int
		if err := db.QueryRowContext(ctx, "SELECT COALESCE(SUM(message_count), 0) FROM sessions WHERE account_id = ?", account).Scan(&stored); err != nil {
			t.Fatal(err)
		}
		if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM outbox WHERE sent_us IS NULL").Scan(&pending); err != nil {
			t.Fatal(err)
		}
		if stored < want || pending != 0 {
			return fmt.Errorf("stored %d of %d messages, %d commit requests unpublished", stored, want, pending)
		}
		return nil
	})

	// The counters below move after a batch's SQL commit (the Redis cache is updated first):
	// wait until the replicas acked every turn, which they do after counting.
	testenv.Eventually(t, 30*time.Second, 50*time.Millisecond, func() error {
		info, err := pub.JS.Consumer(ctx, pub.Names.Stream(bus.StreamTurns), pub.Names.Consumer("ingest"))
		if err != nil {
			return err
		}
		if ci := info.CachedInfo(); ci.NumPending > 0 || ci.NumAckPending > 0 {
			return fmt.Errorf("ingest consumer: %d pending, %d awaiting ack", ci.NumPending, ci.NumAckPending)
		}
		return nil
	})

	// Every message exactly once, seq gap-free per session.
	var rows, distinct int
	if err := db.QueryRowContext(ctx, "SELECT COUNT(*), COUNT(DISTINCT session_id, message_id) FROM messages WHERE account_id = ?", account).Scan(&rows, &distinct); err != nil {
		t.Fatal(err)
	}
	if rows != want || distinct != want {
		t.Fatalf("messages: %d rows, %d distinct; want %d each", rows, distinct, want)
	}
	tokens := map[string][]int{} // session → tokens by seq (index seq-1)
	r, err := db.QueryContext(ctx, "SELECT session_id, seq, tokens FROM messages WHERE account_id = ? ORDER BY session_id, seq", account)
	if err != nil {
		t.Fatal(err)
	}
	for r.Next() {
		var session string
		var seq int64
		var tok int
		if err := r.Scan(&session, &seq, &tok); err != nil {
			t.Fatal(err)
		}
		if seq != int64(len(tokens[session])+1) {
			t.Fatalf("%s: seq %d follows %d: seq is not gap-free", session, seq, len(tokens[session]))
		}
		tokens[session] = append(tokens[session], tok)
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	r.Close()

	// The commit requests that reached <p>.commits.>, and the outbox rows behind them.
	onStream := readCommitRequests(ctx, t, d, pub.Names)
	var outboxRows int
	if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM outbox WHERE subject LIKE ?", pub.Names.Prefix+".commits.%").Scan(&outboxRows); err != nil {
		t.Fatal(err)
	}
	var totalReqs int
	for _, reqs := range onStream {
		totalReqs += len(reqs)
	}
	if outboxRows != totalReqs {
		t.Errorf("%d commit requests in the outbox, %d on the stream", outboxRows, totalReqs)
	}
	var queued float64
	for _, env := range replicas {
		queued += counterValue(t, env, "membus_ingest_commit_requests_total")
	}
	if int(queued) != totalReqs {
		t.Errorf("the replicas queued %v commit requests, %d reached the stream", queued, totalReqs)
	}

	// Each request is a real crossing (the tokens since the previous one reach the threshold),
	// none is repeated, and none is missing (what is left after the last is below it).
	crossings := 0
	for s := 0; s < sessions; s++ {
		session := fmt.Sprintf("s-%02d", s)
		toks := tokens[session]
		reqs := onStream[session]
		var prev int64
		for _, req := range reqs {
			if req.Kind != contract.CommitAuto || req.Upto <= prev || req.Upto > int64(len(toks)) {
				t.Fatalf("%s: request %+v after upto %d: not a new auto crossing within the %d messages", session, req, prev, len(toks))
			}
			if got := sumTokens(toks, prev, req.Upto); got < threshold {
				t.Errorf("%s: request upto %d covers %d tokens since %d, below the threshold %d", session, req.Upto, got, prev, threshold)
			}
			prev = req.Upto
		}
		if rest := sumTokens(toks, prev, int64(len(toks))); rest >= threshold {
			t.Errorf("%s: %d tokens after the last request (upto %d) reach the threshold %d: a crossing was missed", session, rest, prev, threshold)
		}
		var upto int64
		if err := db.QueryRowContext(ctx, "SELECT commit_requested_upto FROM sessions WHERE account_id = ? AND session_id = ?", account, session).Scan(&upto); err != nil {
			t.Fatal(err)
		}
		if upto != prev {
			t.Errorf("%s: commit_requested_upto %d, last request upto %d", session, upto, prev)
		}
		crossings += len(reqs)
	}
	if crossings < sessions {
		t.Fatalf("only %d commit requests over %d sessions: the test did not exercise the trigger", crossings, sessions)
	}

	// The work was shared: every replica stored messages, and the duplicates were recognised.
	var dups float64
	shares := make([]float64, len(replicas))
	for i, env := range replicas {
		shares[i] = counterValue(t, env, "membus_ingest_messages_stored_total")
		if shares[i] == 0 {
			t.Errorf("replica %d stored nothing: the replicas did not share the consumer", i)
		}
		dups += counterValue(t, env, "membus_ingest_messages_duplicate_total")
	}
	if wantDups := float64(events / 10 * perEvent); dups != wantDups {
		t.Errorf("%v duplicate messages counted, want %v", dups, wantDups)
	}
	opsJS, err := jetstream.New(d.opsConn(t)) // the operator's `membus dlq ls`: ingest's user reads no DLQ
	if err != nil {
		t.Fatal(err)
	}
	letters, err := bus.ListDLQ(ctx, opsJS, pub.Names, "", 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(letters) != 0 {
		t.Errorf("dead letters: %+v", letters)
	}
	t.Logf("%d messages stored once by 3 replicas (shares %v); %d commit requests, one per crossing", rows, shares, crossings)
}

// sumTokens adds the tokens of seqs from+1..to.
func sumTokens(toks []int, from, to int64) int {
	n := 0
	for seq := from + 1; seq <= to; seq++ {
		n += toks[seq-1]
	}
	return n
}

// readCommitRequests reads every message of the COMMITS stream (nothing consumes it in this
// test, so none is gone; the work queue has no gaps) as the operator's user and returns the
// requests per session in upto order.
func readCommitRequests(ctx context.Context, t *testing.T, d distDeps, names bus.Names) map[string][]contract.CommitRequest {
	t.Helper()
	js, err := jetstream.New(d.opsConn(t))
	if err != nil {
		t.Fatal(err)
	}
	st, err := js.Stream(ctx, names.Stream(bus.StreamCommits))
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]contract.CommitRequest{}
	for seq := info.State.FirstSeq; info.State.Msgs > 0 && seq <= info.State.LastSeq; seq++ {
		m, err := st.GetMsg(ctx, seq)
		if err != nil {
			t.Fatalf("commit request seq %d: %v", seq, err)
		}
		var req contract.CommitRequest
		if err := json.Unmarshal(m.Data, &req); err != nil {
			t.Fatalf("commit request %s: %v", m.Data, err)
		}
		out[req.SessionID] = append(out[req.SessionID], req)
	}
	for _, reqs := range out {
		sort.Slice(reqs, func(i, j int) bool { return reqs[i].Upto < reqs[j].Upto })
	}
	return out
}
