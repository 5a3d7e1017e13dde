package systemtest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/membus/membus/pkg/bus"
	"github.com/membus/membus/pkg/contract"
	"github.com/membus/membus/pkg/testenv"
)

// TestUpStartup starts `membus up` on an empty data dir: the ready line (with the dev API key
// and the plugin's setup command, NATS URL and an API key) appears within 30 s, the HTTP API answers, and SIGTERM
// ends it with exit 0. Startup time and idle RSS are logged, not asserted (shared machine).
func TestUpStartup(t *testing.T) {
	t.Parallel()
	p := startUp(t, t.TempDir())
	wall, reported := p.waitReady()
	out := p.stdout.String()
	if p.devKey() == "" {
		t.Errorf("no dev API key line in:\n%s", out)
	}
	if want := "openclaw membus setup --nats-url nats://" + p.natsAddr + " --api-key "; !strings.Contains(out, want) {
		t.Errorf("stdout lacks the plugin line %q:\n%s", want, out)
	}
	if code, body := httpGet(t, "http://"+p.httpAddr+"/healthz", ""); code != http.StatusOK {
		t.Errorf("GET /healthz = %d %s", code, body)
	}
	time.Sleep(2 * time.Second) // the scenario: an idle server for 2 s, then its resident memory
	t.Logf("membus up: ready line %s after exec (process reports %s); idle RSS after 2 s: %s",
		wall.Round(time.Millisecond), reported, vmRSS(t, p.cmd.Process.Pid))
	p.stop()
}

// vmRSS reads VmRSS of pid from /proc ("unknown" where there is no /proc).
func vmRSS(t *testing.T, pid int) string {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return "unknown (" + err.Error() + ")"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

// TestKeysWhileRunning: `membus keys create` against the data dir of a running server prints
// the key alone, the gateway honours it within a second, and `membus keys revoke` locks it
// out within a second (docs/design.md §11).
func TestKeysWhileRunning(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := startUp(t, dir)
	p.waitReady()
	memories := "http://" + p.httpAddr + "/v1/memories"
	if code, body := httpGet(t, memories, "mbk_0000000000000000_00"); code != http.StatusUnauthorized {
		t.Fatalf("an unknown key got %d %s, want 401", code, body)
	}

	stdout, stderr, code := runCLI(t, "keys", "create", "--account", "acme", "--user", "alice", "--role", "user", "--data-dir", dir)
	if code != 0 {
		t.Fatalf("keys create exited %d: %s", code, stderr)
	}
	key := strings.TrimSuffix(stdout, "\n")
	if !regexp.MustCompile(`^mbk_\S+$`).MatchString(key) {
		t.Fatalf("keys create stdout = %q, want the key alone on one line", stdout)
	}
	wantStatusWithin(t, memories, key, http.StatusOK, time.Second) // the new key

	id := keyID(t, dir, "alice")
	if _, stderr, code := runCLI(t, "keys", "revoke", id, "--data-dir", dir); code != 0 {
		t.Fatalf("keys revoke exited %d: %s", code, stderr)
	}
	wantStatusWithin(t, memories, key, http.StatusUnauthorized, time.Second) // the revoked key
	if _, stderr, code := runCLI(t, "keys", "revoke", "no-such-key", "--data-dir", dir); code == 0 {
		t.Errorf("keys revoke of an unknown id exited 0 (stderr %q)", stderr)
	}
	p.stop()
}

// keyID finds the id of user's key in `membus keys list --account acme`.
func keyID(t *testing.T, dir, user string) string {
	t.Helper()
	stdout, stderr, code := runCLI(t, "keys", "list", "--account", "acme", "--data-dir", dir)
	if code != 0 {
		t.Fatalf("keys list exited %d: %s", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if len(lines) < 2 || !strings.HasPrefix(lines[0], "ID") {
		t.Fatalf("keys list printed:\n%s", stdout)
	}
	for _, l := range lines[1:] {
		f := strings.Fields(l)
		if len(f) >= 4 && f[1] == "acme" && f[2] == user {
			return f[0]
		}
	}
	t.Fatalf("keys list has no key of acme/%s:\n%s", user, stdout)
	return ""
}

// wantStatusWithin requires GET url to answer want within the given time (a new or revoked key
// takes effect within the gateway's key cache lifetime, 1 s).
func wantStatusWithin(t *testing.T, url, key string, want int, within time.Duration) {
	t.Helper()
	testenv.Eventually(t, within, 20*time.Millisecond, func() error {
		if code, _ := httpGet(t, url, key); code != want {
			return fmt.Errorf("GET %s = %d, want %d", url, code, want)
		}
		return nil
	})
}

// TestDLQCommands dead-letters an invalid turn on a running server and drives `membus dlq
// ls|show|replay`, which find the server through --data-dir (token) and --nats-listen.
func TestDLQCommands(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := startUp(t, dir)
	p.waitReady()
	conn := []string{"--data-dir", dir, "--nats-listen", p.natsAddr}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, js, names := p.connectBus(ctx, "dlq-test")
	subject := names.Turns("acme", "s1")
	payload := `{"v":1}`
	if _, err := bus.Publish(ctx, js, subject, "bad-turn-1", []byte(payload), nil); err != nil {
		t.Fatal(err)
	}

	first := waitLetter(t, conn, subject, 0)
	if first.Reason == "" || first.Stream == "" {
		t.Errorf("letter = %+v, want a reason and a stream", first)
	}
	stdout, stderr, code := runCLI(t, append([]string{"dlq", "ls"}, conn...)...)
	if code != 0 {
		t.Fatalf("dlq ls exited %d: %s", code, stderr)
	}
	seq := strconv.FormatUint(first.DLQSeq, 10)
	if !regexp.MustCompile(`(?m)^` + seq + `\s.*` + regexp.QuoteMeta(subject) + `\s+\S`).MatchString(stdout) {
		t.Errorf("dlq ls does not list seq %s for %s with a reason:\n%s", seq, subject, stdout)
	}

	stdout, stderr, code = runCLI(t, append([]string{"dlq", "show", seq}, conn...)...)
	if code != 0 {
		t.Fatalf("dlq show exited %d: %s", code, stderr)
	}
	var env contract.DLQEnvelope
	if err := json.Unmarshal([]byte(stdout), &env); err != nil {
		t.Fatalf("dlq show printed no envelope JSON (%v):\n%s", err, stdout)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, env.Payload); err != nil {
		t.Fatalf("dlq show payload %q: %v", env.Payload, err)
	}
	if env.OriginalSubject != subject || env.Reason == "" || env.DLQSeq != first.DLQSeq || compact.String() != payload {
		t.Errorf("dlq show = %+v, want subject %s, a reason, seq %s and payload %s", env, subject, seq, payload)
	}

	stdout, stderr, code = runCLI(t, append([]string{"dlq", "replay", seq}, conn...)...)
	if code != 0 {
		t.Fatalf("dlq replay exited %d: %s", code, stderr)
	}
	if strings.TrimSpace(stdout) != "replayed "+seq {
		t.Errorf("dlq replay printed %q", stdout)
	}
	// The payload is still invalid: ingest dead-letters the replay again, under a new seq.
	second := waitLetter(t, conn, subject, first.DLQSeq)
	if second.DLQSeq <= first.DLQSeq || second.Reason == "" {
		t.Errorf("after replay: letter %+v, want a new one after seq %s", second, seq)
	}
	for _, l := range listLetters(t, conn) {
		if l.DLQSeq == first.DLQSeq {
			t.Errorf("replayed letter %s is still listed", seq)
		}
	}
	if _, _, code := runCLI(t, append([]string{"dlq", "show", seq}, conn...)...); code == 0 {
		t.Errorf("dlq show %s of a replayed letter exited 0", seq)
	}
	if _, stderr, code := runCLI(t, "dlq", "ls", "--data-dir", t.TempDir(), "--nats-listen", p.natsAddr); code == 0 || !strings.Contains(stderr, "token") {
		t.Errorf("dlq ls with a data dir without token: exit %d, stderr %q; want an error naming the token", code, stderr)
	}
	p.stop()
}

// waitLetter polls `membus dlq ls --json` until a letter of subject with a seq above after is
// listed (10 s at most).
func waitLetter(t *testing.T, conn []string, subject string, after uint64) contract.DLQEnvelope {
	t.Helper()
	var found contract.DLQEnvelope
	testenv.Eventually(t, 10*time.Second, 100*time.Millisecond, func() error {
		for _, l := range listLetters(t, conn) {
			if l.OriginalSubject == subject && l.DLQSeq > after {
				found = l
				return nil
			}
		}
		return fmt.Errorf("no dead letter of %s after seq %d", subject, after)
	})
	return found
}

func listLetters(t *testing.T, conn []string) []contract.DLQEnvelope {
	t.Helper()
	stdout, stderr, code := runCLI(t, append([]string{"dlq", "ls", "--json"}, conn...)...)
	if code != 0 {
		t.Fatalf("dlq ls --json exited %d: %s", code, stderr)
	}
	var out []contract.DLQEnvelope
	if err := json.Unmarshal([]byte(stdout), &out); err != nil || out == nil {
		t.Fatalf("dlq ls --json is not a JSON array (%v):\n%s", err, stdout)
	}
	return out
}

// TestConfigPrintRedactsSecrets: `membus config print` shows the effective configuration
// without the secrets given on the command line.
func TestConfigPrintRedactsSecrets(t *testing.T) {
	t.Parallel()
	stdout, stderr, code := runCLI(t, "config", "print", "--mysql-dsn", "u:secretpw@tcp(h:3306)/db", "--nats-token", "tok123")
	if code != 0 {
		t.Fatalf("config print exited %d: %s", code, stderr)
	}
	for _, secret := range []string{"secretpw", "tok123"} {
		if strings.Contains(stdout+stderr, secret) {
			t.Errorf("config print shows %q:\n%s%s", secret, stdout, stderr)
		}
	}
	if !strings.Contains(stdout, "tcp(h:3306)/db") {
		t.Errorf("config print lost the non-secret part of the DSN:\n%s", stdout)
	}
}

// TestUpTakenPort: a taken NATS or HTTP port is a clear error — non-zero exit, the flag and
// variable named, and no "membus is up" line.
func TestUpTakenPort(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		flag, env string
	}{
		{"--nats-listen", "MEMBUS_NATS_LISTEN"},
		{"--http-addr", "MEMBUS_HTTP_ADDR"},
	} {
		t.Run(tc.flag, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			p := startUp(t, t.TempDir(), tc.flag, ln.Addr().String())
			code := p.waitExit(30 * time.Second)
			stderr := p.stderr.String()
			if code == 0 {
				t.Errorf("membus up with %s on a taken port exited 0", tc.flag)
			}
			if !strings.Contains(stderr, tc.flag) || !strings.Contains(stderr, tc.env) {
				t.Errorf("stderr does not name %s / %s:\n%s", tc.flag, tc.env, lastBytes(stderr, 2000))
			}
			if strings.Contains(p.stdout.String(), "membus is up") {
				t.Errorf("membus up printed its ready line although %s is taken:\n%s", tc.flag, p.stdout.String())
			}
		})
	}
}
