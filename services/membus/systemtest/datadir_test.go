package systemtest

import (
	"fmt"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestOneOwnerPerDataDir (docs/operations.md "One owner per data dir"): a second `membus up`
// on the data dir of a running one refuses at once with a non-zero exit, naming the first (pid,
// command line, start, addresses) and what to do, and disturbs nothing; so does a single
// service on it. Once the first is killed with SIGKILL, the lock went with it: a new `membus up`
// starts on the same dir.
func TestOneOwnerPerDataDir(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	first := startUp(t, dir)
	first.waitReady()
	pid := first.cmd.Process.Pid
	wantNamed := []string{
		fmt.Sprintf("data dir %s is in use by another membus process", dir),
		fmt.Sprintf("pid:      %d", pid),
		"command:  " + membusBinary(t) + " up --data-dir " + dir,
		"started:  ",
		"HTTP API: http://" + first.httpAddr,
		"NATS:     nats://" + first.natsAddr,
		fmt.Sprintf("kill %d", pid),
		"use another data dir (--data-dir / MEMBUS_DATA_DIR)",
	}

	for _, tc := range []struct {
		name string
		run  func() (stdout, stderr string, code int)
	}{
		{"a second membus up (other ports)", func() (string, string, int) {
			second := startUp(t, dir)
			code := second.waitExit(30 * time.Second)
			return second.stdout.String(), second.stderr.String(), code
		}},
		{"a single service (membus recall)", func() (string, string, int) {
			return runCLI(t, "recall", "--data-dir", dir, "--http-addr", freeAddr(t), "--nats-listen", freeAddr(t))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stdout, stderr, code := tc.run()
			if code == 0 || code == -1 {
				t.Fatalf("exit code %d, want a refusal (1); stderr:\n%s", code, stderr)
			}
			if strings.Contains(stdout, "membus is up") {
				t.Fatalf("it started: %s", stdout)
			}
			for _, w := range wantNamed {
				if !strings.Contains(stderr, w) {
					t.Errorf("the refusal does not say %q:\n%s", w, stderr)
				}
			}
		})
	}
	if code, body := httpGet(t, "http://"+first.httpAddr+"/healthz", ""); code != http.StatusOK || first.exited() {
		t.Fatalf("the first membus up after the refusals: /healthz %d %s, exited %v", code, body, first.exited())
	}

	if err := first.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	first.waitExit(30 * time.Second)
	next := startUp(t, dir)
	next.waitReady()
	// The lock file names the new owner now.
	third := startUp(t, dir)
	third.waitExit(30 * time.Second)
	if w := fmt.Sprintf("pid:      %d", next.cmd.Process.Pid); !strings.Contains(third.stderr.String(), w) {
		t.Errorf("a refusal after the restart does not say %q:\n%s", w, third.stderr.String())
	}
	next.stop()
}
