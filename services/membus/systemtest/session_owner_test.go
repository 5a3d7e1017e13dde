package systemtest

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/membus/membus/pkg/testenv"
)

// TestSessionIsOneUsers: a session is one user's (docs/design.md §3). With `membus up` and two
// user keys of one account from `membus keys create`, bob's append to alice's session id is
// accepted by the gateway (202: existence does not leak) and dead-lettered by ingest; alice's
// session, her commit and her recall hold her words only, and bob still cannot read her session.
func TestSessionIsOneUsers(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := startUp(t, dir)
	p.waitReady()
	base := "http://" + p.httpAddr
	key := func(user string) string {
		stdout, stderr, code := runCLI(t, "keys", "create", "--account", "acme", "--user", user, "--role", "user", "--data-dir", dir)
		if code != 0 {
			t.Fatalf("keys create %s exited %d: %s", user, code, stderr)
		}
		return strings.TrimSpace(stdout)
	}
	alice, bob := key("alice"), key("bob")
	do := func(key, method, path, body string) (int, string) {
		t.Helper()
		code, b := httpDo(t, method, base+path, key, body)
		return code, string(b)
	}
	// A new key takes effect within the gateway's key cache lifetime.
	wantStatusWithin(t, base+"/v1/memories", bob, http.StatusOK, 2*time.Second)

	if code, body := do(alice, "POST", "/v1/sessions/shared-1/messages",
		`{"messages":[{"role":"user","content":"Hi, I am Alice and I live in Lisbon."},{"role":"assistant","content":"Nice to meet you, Alice."}]}`); code != http.StatusAccepted {
		t.Fatalf("alice's append = %d %s", code, body)
	}
	testenv.Eventually(t, 10*time.Second, 50*time.Millisecond, func() error {
		if code, body := do(alice, "GET", "/v1/sessions/shared-1", ""); code != http.StatusOK || !strings.Contains(body, `"message_count":2`) {
			return fmt.Errorf("alice's session = %d %s, want her 2 messages", code, body)
		}
		return nil
	})
	if code, body := do(bob, "POST", "/v1/sessions/shared-1/messages",
		`{"messages":[{"role":"user","content":"I just moved to Paris and I love jazz."},{"role":"assistant","content":"Great!"}]}`); code != http.StatusAccepted {
		t.Fatalf("bob's append to alice's session = %d %s, want 202 (existence does not leak)", code, body)
	}

	conn := []string{"--data-dir", dir, "--nats-listen", p.natsAddr}
	_, _, names := p.connectBus(t.Context(), "session-owner-test")
	letter := waitLetter(t, conn, names.Turns("acme", "shared-1"), 0)
	if !strings.Contains(letter.Reason, "another user") {
		t.Errorf("dead letter reason %q, want it to say the session is another user's", letter.Reason)
	}

	if code, body := do(alice, "GET", "/v1/sessions/shared-1", ""); code != http.StatusOK || !strings.Contains(body, `"message_count":2`) {
		t.Errorf("alice's session after bob's append = %d %s, want her 2 messages only", code, body)
	}
	if code, body := do(alice, "POST", "/v1/sessions/shared-1/commit", `{"wait":true}`); code != http.StatusOK || !strings.Contains(body, `"status":"completed"`) || strings.Contains(body, "Paris") {
		t.Errorf("alice's commit = %d %s, want completed without bob's words", code, body)
	}
	if code, body := do(alice, "POST", "/v1/recall", `{"query":"where does Alice live? Paris jazz Lisbon"}`); code != http.StatusOK || !strings.Contains(body, "Lisbon") || strings.Contains(body, "Paris") || strings.Contains(body, "jazz") {
		t.Errorf("alice's recall = %d %s, want Lisbon and nothing of bob's", code, body)
	}
	if code, body := do(bob, "GET", "/v1/sessions/shared-1", ""); code != http.StatusNotFound {
		t.Errorf("bob reading alice's session = %d %s, want 404", code, body)
	}
	p.stop()
}
