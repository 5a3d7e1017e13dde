package systemtest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/membus/membus/pkg/bus"
	"github.com/membus/membus/pkg/contract"
	"github.com/membus/membus/pkg/store"
	"github.com/membus/membus/pkg/testenv"
)

// msgKey identifies a stored message: the SQL identity (account, session, message_id).
type msgKey struct{ account, session, id string }

// loadPublisher publishes TurnEvents to a running `membus up` as fast as it can from several
// goroutines and records what was attempted and what was acked.
type loadPublisher struct {
	account, user string
	sessions      int

	mu        sync.Mutex
	attempted map[msgKey]bool
	acked     map[msgKey]bool
	ackedN    atomic.Int64
}

const (
	loadWorkers      = 4
	loadMaxPerWorker = 3000 // bounds the run if the server drains slowly
)

// run publishes until stop is closed, the connection closes or the cap is reached.
func (lp *loadPublisher) run(nc *nats.Conn, js jetstream.JetStream, names bus.Names, stop <-chan struct{}) {
	var wg sync.WaitGroup
	for w := range loadWorkers {
		wg.Go(func() {
			for i := range loadMaxPerWorker {
				select {
				case <-stop:
					return
				default:
				}
				if nc.IsClosed() {
					return
				}
				ev := lp.event(w, i)
				keys := make([]msgKey, len(ev.Messages))
				lp.mu.Lock()
				for j, m := range ev.Messages {
					keys[j] = msgKey{ev.AccountID, ev.SessionID, m.MessageID}
					lp.attempted[keys[j]] = true
				}
				lp.mu.Unlock()
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				_, err := bus.PublishJSON(ctx, js, names.Turns(ev.AccountID, ev.SessionID), ev.EventID, ev)
				cancel()
				if err != nil {
					time.Sleep(5 * time.Millisecond) // not acked: not recorded; pace the retries while the server goes down
					continue
				}
				lp.mu.Lock()
				for _, k := range keys {
					lp.acked[k] = true
				}
				lp.mu.Unlock()
				lp.ackedN.Add(1)
			}
		})
	}
	wg.Wait()
}

// event is worker w's i-th TurnEvent: two messages with ids unique across the run.
func (lp *loadPublisher) event(w, i int) contract.TurnEvent {
	at := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC).Add(time.Duration(w*loadMaxPerWorker+i) * time.Second)
	eventID := fmt.Sprintf("load-w%d-e%d", w, i)
	ev := contract.TurnEvent{V: 1, EventID: eventID, AccountID: lp.account, UserID: lp.user, AgentID: "main",
		SessionID: fmt.Sprintf("load-s%d", (w+i)%lp.sessions), Source: "durability-test", SentAt: at}
	for j, role := range []string{contract.RoleUser, contract.RoleAssistant} {
		ev.Messages = append(ev.Messages, contract.Message{MessageID: fmt.Sprintf("%s-m%d", eventID, j), Position: j, Role: role,
			Parts: []contract.Part{{Type: contract.PartText, Text: fmt.Sprintf("turn %d of worker %d, message %d", i, w, j)}}, CreatedAt: at})
	}
	return ev
}

// TestKillMidLoadLosesNothingAcked publishes turns as fast as it can, signals `membus up` in
// the middle of the load, restarts it on the same data dir and checks that every acked
// message is stored exactly once and nothing else is duplicated (docs/design.md §5, §7: durable by
// default, Ctrl-C drains and loses nothing acked). The restarted server still answers for the
// sessions over HTTP.
func TestKillMidLoadLosesNothingAcked(t *testing.T) {
	for _, tc := range []struct {
		name   string
		signal syscall.Signal
	}{
		{"SIGTERM", syscall.SIGTERM},
		{"SIGKILL", syscall.SIGKILL},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dataDir := t.TempDir()
			first := startUp(t, dataDir) // durable default: no --nats-sync flag
			first.waitReady()
			devKey := first.devKey()
			if devKey == "" {
				t.Fatal("the first start printed no dev API key")
			}

			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			nc, js, names := first.connectBus(ctx, "durability-test", nats.NoReconnect())
			lp := &loadPublisher{account: "default", user: "default", sessions: 6,
				attempted: map[msgKey]bool{}, acked: map[msgKey]bool{}}
			stop := make(chan struct{})
			var stopOnce sync.Once
			stopPublishers := func() { stopOnce.Do(func() { close(stop) }) }
			defer stopPublishers() // also when the test fails before the signal
			pubDone := make(chan struct{})
			go func() {
				defer close(pubDone)
				lp.run(nc, js, names, stop)
			}()

			// Signal after ~200 acked publishes while the publishers keep going.
			testenv.Eventually(t, 30*time.Second, time.Millisecond, func() error {
				if n := lp.ackedN.Load(); n < 200 {
					return fmt.Errorf("only %d publishes acked", n)
				}
				return nil
			})
			atSignal := lp.ackedN.Load()
			signalled := time.Now()
			if err := first.cmd.Process.Signal(tc.signal); err != nil {
				t.Fatal(err)
			}
			code := first.waitExit(30 * time.Second)
			exitAfter := time.Since(signalled)
			atExit := lp.ackedN.Load()
			stopPublishers()
			select {
			case <-pubDone:
			case <-time.After(15 * time.Second):
				t.Fatal("publishers did not stop within 15 s of the server's exit")
			}
			nc.Close()
			switch tc.signal {
			case syscall.SIGTERM:
				if code != 0 {
					t.Fatalf("membus up exited with %d after SIGTERM, want 0", code)
				}
			case syscall.SIGKILL:
				if code != -1 {
					t.Fatalf("membus up exit code %d after SIGKILL, want -1 (killed)", code)
				}
			}
			total := lp.ackedN.Load()
			t.Logf("%s: exit %d after %s; events acked: %d before the signal, %d before the exit, %d in all (cap %d); %d messages attempted",
				tc.name, code, exitAfter.Round(time.Millisecond), atSignal, atExit, total, loadWorkers*loadMaxPerWorker, len(lp.attempted))

			second := startUp(t, dataDir)
			second.waitReady()
			st, err := store.OpenSQLite(context.Background(), filepath.Join(dataDir, "membus.db"))
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			restarted := time.Now()
			waitTurnsDrained(t, second, names, 60*time.Second)
			// After SIGKILL, turns delivered to ingest but not acked come back only when their
			// AckWait (30 s) expires: JetStream's redelivery, not a loss.
			t.Logf("%s: TURNS drained %s after the restart", tc.name, time.Since(restarted).Round(time.Millisecond))
			counts := storedCounts(t, st)
			missing := 0
			for k := range lp.acked {
				if counts[k] == 0 {
					if missing < 10 {
						t.Errorf("acked message %v is not stored", k)
					}
					missing++
				}
			}
			if missing > 0 {
				t.Fatalf("%d of %d acked messages lost", missing, len(lp.acked))
			}
			perSession := map[string]int{}
			for k, n := range counts {
				if n != 1 {
					t.Errorf("message %v stored %d times, want once", k, n)
				}
				if !lp.attempted[k] {
					t.Errorf("message %v stored but never published", k)
				}
				perSession[k.session] += n
			}
			t.Logf("%d acked messages, %d stored (%d published without an ack arrived anyway)",
				len(lp.acked), len(counts), len(counts)-len(lp.acked))

			// The restarted server answers for the sessions over HTTP (test of "a restart keeps
			// data": message_count counts every message ever stored in the session).
			for session, want := range perSession {
				var meta contract.SessionMeta
				getJSON(t, "http://"+second.httpAddr+"/v1/sessions/"+session, devKey, &meta)
				if meta.MessageCount != want {
					t.Errorf("GET /v1/sessions/%s: message_count %d, want %d", session, meta.MessageCount, want)
				}
			}
			second.stop()
		})
	}
}

// waitTurnsDrained waits until the TURNS work queue of the server at p is empty: ingest acks a
// turn event only after its messages are durably stored, so the store is then final.
func waitTurnsDrained(t *testing.T, p *upProc, names bus.Names, timeout time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	nc, js, _ := p.connectBus(ctx, "durability-check")
	defer nc.Close()
	testenv.Eventually(t, timeout, 100*time.Millisecond, func() error {
		s, err := js.Stream(ctx, names.Stream(bus.StreamTurns))
		if err != nil {
			return fmt.Errorf("TURNS stream: %w", err)
		}
		info, err := s.Info(ctx)
		if err != nil {
			return fmt.Errorf("TURNS stream info: %w", err)
		}
		if info.State.Msgs != 0 {
			return fmt.Errorf("the TURNS stream still holds %d events", info.State.Msgs)
		}
		return nil
	})
}

func storedCounts(t *testing.T, st *store.Store) map[msgKey]int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rows, err := st.DB().QueryContext(ctx, `SELECT account_id, session_id, message_id, COUNT(*) FROM messages
		WHERE account_id = 'default' GROUP BY account_id, session_id, message_id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[msgKey]int{}
	for rows.Next() {
		var k msgKey
		var n int
		if err := rows.Scan(&k.account, &k.session, &k.id, &n); err != nil {
			t.Fatal(err)
		}
		out[k] = n
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// getJSON GETs url with the API key and decodes a 200 answer into v.
func getJSON(t *testing.T, url, key string, v any) {
	t.Helper()
	code, body := httpGet(t, url, key)
	if code != http.StatusOK {
		t.Fatalf("GET %s = %d %s", url, code, body)
	}
	if err := json.Unmarshal(body, v); err != nil {
		t.Fatalf("GET %s: %v in %s", url, err, body)
	}
}

func httpGet(t *testing.T, url, key string) (int, []byte) {
	t.Helper()
	return httpDo(t, http.MethodGet, url, key, "")
}

// httpDo sends a JSON body ("" for none) with key as the bearer key and returns the answer.
func httpDo(t *testing.T, method, url, key, body string) (int, []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}
