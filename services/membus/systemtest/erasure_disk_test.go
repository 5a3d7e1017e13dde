package systemtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/membus/membus/pkg/bus"
	"github.com/membus/membus/pkg/contract"
	"github.com/membus/membus/pkg/testenv"
)

// TestErasureLeavesNothingOnDisk (docs/operations.md "Erasure on disk"): a unique marker in
// the erased user's (or session's) messages, in a memory extracted and committed from them, and
// in a dead letter of theirs is readable in no file of the data dir once the erasure has
// answered — while `membus up` still runs, and again after a clean stop. Control markers of
// what was not erased (another user; the user's other session) are still found, so the scan
// finds what it looks for.
func TestErasureLeavesNothingOnDisk(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		// The erasure's route, and whether eve's key (else the admin's) calls it.
		method, path string
		asEve        bool
		// keptSession: a session of the erased user that stays, holding its own control marker.
		keptSession bool
	}{
		{name: "a user erased (DELETE /v1/users/eve)", method: "DELETE", path: "/v1/users/eve"},
		{name: "one session erased (DELETE /v1/sessions/eve-1)", method: "DELETE", path: "/v1/sessions/eve-1", asEve: true, keptSession: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			p := startUp(t, dir)
			p.waitReady()
			stdout, stderr, code := runCLI(t, "keys", "create", "--account", "acme", "--role", "admin", "--data-dir", dir)
			if code != 0 {
				t.Fatalf("keys create exited %d: %s", code, stderr)
			}
			// One admin key of account acme, acting for eve, for kim, or for itself.
			client := func(user string) *httpClient {
				c := &httpClient{t: t, base: "http://" + p.httpAddr, key: strings.TrimSpace(stdout), hdr: map[string]string{}}
				if user != "" {
					c.hdr["X-Membus-User"] = user
				}
				return c
			}
			eve, kim, admin := client("eve"), client("kim"), client("")
			gone, keptOther, keptOwn := marker("Erased"), marker("Kept"), marker("Keptown")

			// The erased user's session: messages and the memories committed from them.
			postTurn(eve, "eve-1", "I live in "+gone+".", "Nice to meet you.", "My favourite drink is "+gone+" tea.", "Noted.")
			commitWait(eve, "eve-1")
			if !tc.keptSession {
				// A memory stored directly (its own session).
				eve.must(http.StatusOK, "POST", "/v1/memories", map[string]any{"text": "I love the " + gone + " festival."}, nil)
			} else {
				postTurn(eve, "eve-2", "I live in "+keptOwn+".", "Nice.")
				commitWait(eve, "eve-2")
			}
			// Another user of the account, untouched by the erasure.
			postTurn(kim, "kim-1", "I live in "+keptOther+".", "Nice.")
			commitWait(kim, "kim-1")
			if !memoriesMention(eve, gone) {
				t.Fatal("no memory of eve holds the marker: the test would not cover memories")
			}
			// Dead letters in one DLQ block: eve's first, then kim's, which stays.
			deadLetter(t, p, "eve-1", "eve", "Please remember "+gone+".")
			deadLetter(t, p, "kim-1", "kim", "Please remember "+keptOther+".")

			before := testenv.FilesHolding(t, dir, gone)
			if len(before) == 0 {
				t.Fatal("before the erasure no file holds the marker: the scan proves nothing")
			}
			t.Logf("before the erasure the marker is in %v", before)

			eraser := admin
			if tc.asEve {
				eraser = eve
			}
			var res contract.EraseResult
			eraser.must(http.StatusOK, tc.method, tc.path, nil, &res)
			if res.Messages == 0 || res.Memories == 0 {
				t.Fatalf("erasure = %+v, want messages and memories erased", res)
			}
			if left := testenv.FilesHolding(t, dir, gone); len(left) != 0 {
				t.Errorf("running, after the erasure answered, the marker is still in %v", left)
			}
			if memoriesMention(eve, gone) {
				t.Error("a memory of eve still holds the marker")
			}

			p.stop()
			if left := testenv.FilesHolding(t, dir, gone); len(left) != 0 {
				t.Errorf("after a clean stop the marker is still in %v", left)
			}
			want := []string{keptOther}
			if tc.keptSession {
				want = append(want, keptOwn)
			}
			for _, m := range want {
				if len(testenv.FilesHolding(t, dir, m)) == 0 {
					t.Errorf("after a clean stop the control marker %s (not erased) is in no file", m)
				}
			}
		})
	}
}

// marker is a word that appears nowhere else: a capitalised prefix and random hex.
func marker(prefix string) string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// deadLetter publishes a turn of user on session's subject of account acme whose payload names
// another account: ingest dead-letters it whole (the text with it), and the test waits for it.
func deadLetter(t *testing.T, p *upProc, session, user, text string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, js, names := p.connectBus(ctx, "erasure-test", nats.NoReconnect())
	ev := turnEvent("elsewhere", user, session, text)
	if _, err := bus.PublishJSON(ctx, js, names.Turns("acme", session), ev.EventID, ev); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 20*time.Second, 20*time.Millisecond, func() error {
		dl, err := bus.ListDLQ(ctx, js, names, names.DLQ("*", "acme", bus.SessionToken(session)), 10)
		if err != nil {
			return err
		}
		if len(dl) == 0 {
			return fmt.Errorf("the turn on %s is not dead-lettered yet", session)
		}
		return nil
	})
}

// commitWait archives the session and extracts its memories, waiting until they are indexed.
func commitWait(c *httpClient, session string) {
	c.t.Helper()
	var res contract.CommitResult
	c.must(http.StatusOK, "POST", "/v1/sessions/"+session+"/commit", map[string]any{"wait": true, "keep_recent": 0}, &res)
	if res.Status != contract.StatusCompleted {
		c.t.Fatalf("commit of %s = %+v", session, res)
	}
}

// memoriesMention reports whether one of the client's user's active memories contains s.
func memoriesMention(c *httpClient, s string) bool {
	c.t.Helper()
	var list contract.MemoriesListResponse
	c.must(http.StatusOK, "GET", "/v1/memories?limit=100", nil, &list)
	for _, m := range list.Items {
		if strings.Contains(strings.ToLower(m.Text), strings.ToLower(s)) {
			return true
		}
	}
	return false
}
