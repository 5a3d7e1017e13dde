package systemtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/membus/membus/pkg/bus"
	"github.com/membus/membus/pkg/bus/callout"
	"github.com/membus/membus/pkg/config"
	"github.com/membus/membus/pkg/contract"
	"github.com/membus/membus/pkg/store"
	"github.com/membus/membus/pkg/testenv"
	"github.com/membus/membus/services/membus/internal/app"
)

// distDeps are the shared servers of a distributed deployment: a standalone nats-server
// child process, a fresh MariaDB database and Redis (with a subject prefix of its own, which
// also prefixes this test's Redis keys). The nats-server runs with the authorization block
// deploy/ runs (`membus keys nats-auth`): the user "membus" with the token, each service's own
// user with only its permissions, the auth callout for API keys.
type distDeps struct {
	natsURL, dsn, redisURL, prefix, token string
}

func startDistDeps(t *testing.T) distDeps {
	t.Helper()
	bin := testenv.NATSServerBinary(t)
	dsn := testenv.MySQLDSN(t)
	redisURL := testenv.RedisURLValue(t)

	b := make([]byte, 4)
	_, _ = rand.Read(b)
	prefix := "mbd" + hex.EncodeToString(b)
	tb := make([]byte, 24)
	_, _ = rand.Read(tb)
	token := "tok" + hex.EncodeToString(tb) // a letter first: nats-server parses the variable's value as config
	conf, env := natsAuthConf(t, prefix, token)

	addr := freeAddr(t)
	_, port, _ := net.SplitHostPort(addr)
	cmd := exec.Command(bin, "-js", "-sd", t.TempDir(), "-a", "127.0.0.1", "-p", port, "-c", conf)
	cmd.Env = append(os.Environ(), env...)
	out := &syncBuffer{} // written by exec's copying goroutine while the wait below reads it
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		// A permission the services lack shows here first: the server logs every refused
		// publish and subscription ("Publish Violation", "Subscription Violation").
		var violations []string
		for _, line := range strings.Split(out.String(), "\n") {
			if strings.Contains(line, "Violation") {
				violations = append(violations, line)
			}
		}
		if len(violations) > 0 {
			t.Errorf("nats-server refused %d operations of the services:\n%s", len(violations), strings.Join(violations, "\n"))
		}
	})
	testenv.Eventually(t, 15*time.Second, 50*time.Millisecond, func() error {
		select {
		case <-exited:
			t.Fatalf("nats-server exited: %s", out.String())
		default:
		}
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return fmt.Errorf("nats-server does not listen on %s: %w: %s", addr, err, out.String())
		}
		return c.Close()
	})
	return distDeps{natsURL: "nats://" + addr, dsn: dsn, redisURL: redisURL, prefix: prefix, token: token}
}

// natsAuthConf writes a nats-server config holding the generated authorization block for
// prefix and returns its path and the environment the block reads its secrets from, as
// deploy/docker-compose.yml gives the NATS nodes.
func natsAuthConf(t *testing.T, prefix, token string) (string, []string) {
	t.Helper()
	names, err := bus.NewNames(prefix)
	if err != nil {
		t.Fatal(err)
	}
	block, err := names.AuthConf()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "nats.conf")
	if err := os.WriteFile(path, []byte(block), 0o600); err != nil {
		t.Fatal(err)
	}
	iss, err := callout.IssuerPublicKey(token)
	if err != nil {
		t.Fatal(err)
	}
	env := []string{bus.ConfTokenVar + "=" + token, bus.ConfIssuerVar + "=" + iss}
	for _, svc := range bus.Services {
		p, err := bus.ServicePassword(token, svc)
		if err != nil {
			t.Fatal(err)
		}
		env = append(env, bus.ConfPasswordVar(svc)+"="+p)
	}
	return path, env
}

// opsConn connects to the deployment's NATS as the user "membus" (the token), as the
// operator tools do.
func (d distDeps) opsConn(t *testing.T) *nats.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	nc, err := bus.Connect(ctx, d.natsURL, d.token, "test-ops")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// startReplica runs every service in-process against the shared servers, as one replica of a
// distributed deployment, and returns its environment and HTTP base URL.
func startReplica(t *testing.T, d distDeps, instance string) (*app.Env, string) {
	t.Helper()
	cfg := config.Defaults()
	cfg.NATSURL = d.natsURL
	cfg.NATSToken = d.token
	cfg.MySQLDSN = d.dsn
	cfg.RedisURL = d.redisURL
	cfg.SubjectPrefix = d.prefix
	cfg.InstanceID = instance
	env, base := startSystem(t, t.TempDir(), cfg)
	if env.Server != nil || env.Store.Dialect() != store.MySQL || env.Redis == nil {
		t.Fatalf("replica %s is not distributed: embedded NATS %v, SQL %s, Redis %v", instance, env.Server != nil, env.Store.Dialect(), env.Redis != nil)
	}
	return env, base
}

// TestDistributedWalkingSkeleton: the walking skeleton with every part real and separate — a
// standalone nats-server, MariaDB and Redis — turns in over NATS, a synchronous commit over
// the RPC, recall over the RPC and over HTTP.
func TestDistributedWalkingSkeleton(t *testing.T) {
	d := startDistDeps(t)
	env, base := startReplica(t, d, "dist-a")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	commitBoston(ctx, t, env)
	recallBoston(ctx, t, env)

	key, _, err := env.Store.CreateKey(ctx, "acme", "u1", store.RoleUser, "test")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(map[string]any{"query": "where do I live?"})
	req, _ := http.NewRequestWithContext(ctx, "POST", base+"/v1/recall", bytes.NewReader(b))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), "Boston") || !strings.Contains(string(body), `"s-1-m0"`) {
		t.Fatalf("POST /v1/recall = %d %s", resp.StatusCode, body)
	}
}

// TestDistributedTwoReplicas: two replicas of every service share one NATS, MariaDB and Redis.
// 20 sessions × 10 events (some delivered twice) with a low commit threshold make both
// replicas ingest and commit the same sessions at once. Every message is stored exactly once,
// and no seq is ever archived twice: a session's archive ranges never overlap.
func TestDistributedTwoReplicas(t *testing.T) {
	d := startDistDeps(t)
	a, _ := startReplica(t, d, "dist-a")
	b, _ := startReplica(t, d, "dist-b")
	envs := []*app.Env{a, b}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	const sessions, events = 20, 10
	threshold := contract.MinCommitTokenThreshold
	filler := strings.Repeat("We talked about the garden, the roof repairs and the trip to Lisbon in May. ", 20)
	var wg sync.WaitGroup
	errs := make(chan error, sessions)
	for s := 0; s < sessions; s++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			session := fmt.Sprintf("s-%02d", s)
			for e := 0; e < events; e++ {
				ev := turnEvent("acme", "u1", session, fmt.Sprintf("event %d: my favourite number is %d. %s", e, e, filler), "Noted. "+filler)
				for i := range ev.Messages {
					ev.Messages[i].MessageID = fmt.Sprintf("%s-e%d-m%d", session, e, i)
					ev.Messages[i].CreatedAt = ev.Messages[i].CreatedAt.Add(time.Duration(e) * time.Minute)
				}
				ev.EventID = fmt.Sprintf("%s-e%d", session, e)
				ev.Turn.CommitTokenThreshold = &threshold
				env := envs[(s+e)%2]
				subj := env.Names.Turns("acme", session)
				if _, err := bus.PublishJSON(ctx, env.JS, subj, ev.EventID, ev); err != nil {
					errs <- err
					return
				}
				if e%3 == 0 { // a redelivery under another Nats-Msg-Id
					if _, err := bus.PublishJSON(ctx, env.JS, subj, ev.EventID+"-again", ev); err != nil {
						errs <- err
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

	// A synchronous commit per session, through either replica, at once.
	results := make([]contract.CommitResult, sessions)
	callErrs := make([]error, sessions)
	for s := 0; s < sessions; s++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			env := envs[s%2]
			callErrs[s] = bus.Call(ctx, env.NC, env.Names.RPC("acme", "commit"), contract.CommitRPCRequest{
				V: 1, RequestID: "final-" + strconv.Itoa(s), UserID: "u1", SessionID: fmt.Sprintf("s-%02d", s), Kind: "sync", Wait: true,
				// What this test checks is exactly-once and order, not latency: 40 commits of
				// 20 long messages each, extracted under -race on 2 busy cores, took longer
				// than the 60 s default wait (every final commit answered "timeout").
				TimeoutMS: int((150 * time.Second).Milliseconds()),
			}, &results[s])
		}()
	}
	wg.Wait()
	for s := range results {
		if callErrs[s] != nil || results[s].Status != contract.StatusCompleted {
			t.Errorf("s-%02d: final commit = %+v, %v", s, results[s], callErrs[s])
		}
	}

	db := a.Store.DB()
	var rows, distinct int
	if err := db.QueryRowContext(ctx, "SELECT COUNT(*), COUNT(DISTINCT session_id, message_id) FROM messages WHERE account_id = 'acme'").Scan(&rows, &distinct); err != nil {
		t.Fatal(err)
	}
	if want := sessions * events * 2; rows != want || distinct != want {
		t.Errorf("messages: %d rows, %d distinct; want %d each", rows, distinct, want)
	}

	// Archive ranges of each session, in order, never overlap.
	r, err := db.QueryContext(ctx, "SELECT session_id, from_seq, to_seq FROM archives WHERE account_id = 'acme' ORDER BY session_id, from_seq")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	lastTo := map[string]int64{}
	perSession := map[string]int{}
	for r.Next() {
		var session string
		var from, to int64
		if err := r.Scan(&session, &from, &to); err != nil {
			t.Fatal(err)
		}
		if from > to {
			t.Errorf("%s: empty archive range %d..%d", session, from, to)
		}
		if prev, ok := lastTo[session]; ok && from <= prev {
			t.Errorf("%s: archive %d..%d overlaps the previous one ending at %d", session, from, to, prev)
		}
		lastTo[session] = to
		perSession[session]++
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	multi := 0
	for s := 0; s < sessions; s++ {
		session := fmt.Sprintf("s-%02d", s)
		if lastTo[session] != events*2 {
			t.Errorf("%s: archived up to %d after the final commit, want %d", session, lastTo[session], events*2)
		}
		if perSession[session] > 1 {
			multi++
		}
	}
	if multi == 0 {
		t.Errorf("no session had an automatic commit before the final one: the test did not exercise concurrent commits")
	}
	// Each archived message belongs to exactly the archive whose range holds its seq.
	var misplaced int
	if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM messages m LEFT JOIN archives a ON a.id = m.archive_id
		WHERE m.account_id = 'acme' AND (a.id IS NULL OR m.seq < a.from_seq OR m.seq > a.to_seq)`).Scan(&misplaced); err != nil {
		t.Fatal(err)
	}
	if misplaced != 0 {
		t.Errorf("%d messages are unarchived or outside their archive's range", misplaced)
	}
	letters, err := bus.ListDLQ(ctx, a.JS, a.Names, "", 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(letters) != 0 {
		t.Errorf("dead letters: %+v", letters)
	}
}
