package systemtest

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/membus/membus/pkg/bus"
	"github.com/membus/membus/pkg/contract"
	"github.com/membus/membus/pkg/testenv"
)

// serviceProc is one `membus <service>` child process of a distributed deployment.
type serviceProc struct {
	name, dataDir, httpAddr string
	cmd                     *exec.Cmd
	out                     *syncBuffer
	done                    chan struct{}
}

// startService runs `membus <name>` against the shared servers with its own data dir (its own
// local vector index) and ops address, and waits for its /readyz.
// It connects to NATS as the service's own user, its password derived from the token (extra
// flags, such as --nats-password alone, replace the token).
func startService(t *testing.T, d distDeps, name, dataDir string, extra ...string) *serviceProc {
	t.Helper()
	p := &serviceProc{name: name, dataDir: dataDir, httpAddr: freeAddr(t), out: &syncBuffer{}, done: make(chan struct{})}
	args := []string{name, "--data-dir", dataDir, "--http-addr", p.httpAddr, "--embedder", "hash",
		"--nats-url", d.natsURL, "--mysql-dsn", d.dsn, "--redis-url", d.redisURL, "--subject-prefix", d.prefix,
		"--instance-id", fmt.Sprintf("%s-%d", name, time.Now().UnixNano()%1e6)}
	if len(extra) == 0 {
		extra = []string{"--nats-token", d.token}
	}
	p.cmd = exec.Command(membusBinary(t), append(args, extra...)...)
	p.cmd.Env = childEnv()
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		p.stop()
		if t.Failed() {
			t.Logf("membus %s output (tail):\n%s", name, lastBytes(p.out.String(), 3000))
		}
	})
	testenv.Eventually(t, 60*time.Second, 50*time.Millisecond, func() error {
		select {
		case <-p.done:
			t.Fatalf("membus %s exited: %s", name, lastBytes(p.out.String(), 3000))
		default:
		}
		r, err := http.Get("http://" + p.httpAddr + "/readyz")
		if err != nil {
			return err
		}
		r.Body.Close()
		if r.StatusCode != 200 {
			return fmt.Errorf("readyz %d", r.StatusCode)
		}
		return nil
	})
	return p
}

func (p *serviceProc) stop() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(20 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// recalls reads the number of recalls this process answered from its /metrics.
func (p *serviceProc) recalls(t *testing.T) int {
	t.Helper()
	r, err := http.Get("http://" + p.httpAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	b, _ := io.ReadAll(r.Body)
	m := regexp.MustCompile(`(?m)^membus_recall_seconds_count(?:\{[^}]*\})? (\d+)`).FindSubmatch(b)
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(string(m[1]))
	return n
}

// gauge reads one gauge of this process's /metrics (-1 when it is missing).
func (p *serviceProc) gauge(t *testing.T, name string) float64 {
	t.Helper()
	r, err := http.Get("http://" + p.httpAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	b, _ := io.ReadAll(r.Body)
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + `(?:\{[^}]*\})? (\S+)`).FindSubmatch(b)
	if m == nil {
		return -1
	}
	v, _ := strconv.ParseFloat(string(m[1]), 64)
	return v
}

// TestRecallReplicasShareOneIndex: one ingest, one extract and two recall processes on a
// standalone nats-server, MariaDB and Redis, each recall replica with a local index of its own
// (no Qdrant). A commit that returned with wait:true is recallable from both replicas at once;
// an erased user is gone from both; a replica restarted after a commit it missed answers right.
func TestRecallReplicasShareOneIndex(t *testing.T) {
	d := startDistDeps(t)
	dirs := map[string]string{"ingest": t.TempDir(), "extract": t.TempDir(), "recall-a": t.TempDir(), "recall-b": t.TempDir()}
	startService(t, d, "ingest", dirs["ingest"])
	startService(t, d, "extract", dirs["extract"])
	recallA := startService(t, d, "recall", dirs["recall-a"])
	recallB := startService(t, d, "recall", dirs["recall-b"])

	nc := d.opsConn(t)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	names, err := bus.NewNames(d.prefix)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	const account = "acme"
	tell := func(user, session, text string) contract.CommitResult {
		t.Helper()
		ev := contract.TurnEvent{V: 1, EventID: "ev-" + session, AccountID: account, UserID: user, SessionID: session, Source: "test",
			Messages: []contract.Message{
				{MessageID: session + "-u", Role: "user", CreatedAt: time.Now().UTC(), Parts: []contract.Part{{Type: contract.PartText, Text: text}}},
				{MessageID: session + "-a", Role: "assistant", Position: 1, CreatedAt: time.Now().UTC(), Parts: []contract.Part{{Type: contract.PartText, Text: "Noted."}}},
			}, SentAt: time.Now().UTC()}
		if _, err := bus.PublishJSON(ctx, js, names.Turns(account, session), ev.EventID, ev); err != nil {
			t.Fatal(err)
		}
		var res contract.CommitResult
		cctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		defer cancel()
		if err := bus.Call(cctx, nc, names.RPC(account, "commit"), contract.CommitRPCRequest{V: 1, RequestID: "c-" + session, UserID: user,
			SessionID: session, Kind: contract.CommitSync, Wait: true}, &res); err != nil {
			t.Fatal(err)
		}
		if res.Status != contract.StatusCompleted {
			t.Fatalf("commit %s: %+v", session, res)
		}
		return res
	}
	// recallAll asks 24 times (the two replicas share one queue group, so both answer) and
	// returns how many answers held want and how many were degraded.
	recallAll := func(user, query, want string) (hits, degraded int) {
		t.Helper()
		for range 24 {
			var resp contract.RecallResponse
			if err := bus.Call(ctx, nc, names.RPC(account, "recall"), contract.RecallRequest{V: 1, UserID: user, Query: query}, &resp); err != nil {
				t.Fatal(err)
			}
			if strings.Contains(resp.Block, want) {
				hits++
			}
			if resp.Degraded {
				degraded++
			}
		}
		return hits, degraded
	}

	aBefore, bBefore := recallA.recalls(t), recallB.recalls(t)
	tell("alice", "s-lisbon", "I live in Lisbon.")
	if hits, degraded := recallAll("alice", "Where do I live?", "Lisbon"); hits != 24 || degraded != 0 {
		t.Fatalf("right after the commit returned: %d of 24 recalls found Lisbon (%d degraded); want every one, from both replicas", hits, degraded)
	}
	for _, p := range []*serviceProc{recallA, recallB} {
		if n := p.gauge(t, "membus_vector_index_points"); n <= 0 {
			t.Errorf("%s: membus_vector_index_points = %v, want the indexed points", p.dataDir, n)
		}
		if lag := p.gauge(t, "membus_recall_index_lag_events"); lag != 0 {
			t.Errorf("%s: membus_recall_index_lag_events = %v after catching up, want 0", p.dataDir, lag)
		}
	}
	if recallA.recalls(t) == aBefore || recallB.recalls(t) == bBefore {
		t.Fatalf("both replicas must have answered: recall-a %d → %d, recall-b %d → %d", aBefore, recallA.recalls(t), bBefore, recallB.recalls(t))
	}

	var erased contract.EraseResult
	if err := bus.Call(ctx, nc, names.RPC(account, "erase"), contract.EraseRequest{V: 1, UserID: "alice"}, &erased); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 10*time.Second, 50*time.Millisecond, func() error {
		if hits, _ := recallAll("alice", "Where do I live?", "Lisbon"); hits != 0 {
			return fmt.Errorf("%d of 24 recalls still found the erased memory", hits)
		}
		return nil
	})

	// Replica B misses a commit while it is down, then catches up when it starts again.
	recallB.stop()
	tell("bob", "s-porto", "I live in Porto.")
	recallB = startService(t, d, "recall", dirs["recall-b"])
	bBefore = recallB.recalls(t)
	if hits, degraded := recallAll("bob", "Where do I live?", "Porto"); hits != 24 || degraded != 0 {
		t.Fatalf("after replica B restarted: %d of 24 recalls found Porto (%d degraded)", hits, degraded)
	}
	if recallB.recalls(t) == bBefore {
		t.Fatal("the restarted replica answered no recall")
	}
	if hits, _ := recallAll("alice", "Where do I live?", "Lisbon"); hits != 0 {
		t.Fatalf("the restarted replica brought back the erased memory (%d of 24)", hits)
	}
}
