package datadir

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The refusal names the owner whatever the lock file holds: a second Acquire in this process
// conflicts with the first exactly as another process would (flock locks belong to the open
// file, not to the process).
func TestSecondAcquireIsRefusedAndNamesTheOwner(t *testing.T) {
	for _, tc := range []struct {
		name string
		// prepare runs with the lock held; it may record addresses or damage the file.
		prepare  func(t *testing.T, l *Lock, path string)
		want     []string // in the refusal
		wantNone []string // not in the refusal
		kernel   bool     // needs the kernel's record of lock holders (/proc/locks)
	}{
		{
			name: "owner before its addresses are known: pid, command line, start time",
			want: []string{"pid:      " + strconv.Itoa(os.Getpid()), "command:  " + commandLineOrArgs(), "started:  ",
				"another data dir (--data-dir / MEMBUS_DATA_DIR)", "kill " + strconv.Itoa(os.Getpid())},
			wantNone: []string{"HTTP API:", "NATS:"},
		},
		{
			name: "owner that recorded its addresses names them",
			prepare: func(t *testing.T, l *Lock, _ string) {
				if err := l.Record("127.0.0.1:18080", "nats://127.0.0.1:14222"); err != nil {
					t.Fatal(err)
				}
			},
			want: []string{"pid:      " + strconv.Itoa(os.Getpid()), "HTTP API: http://127.0.0.1:18080", "NATS:     nats://127.0.0.1:14222"},
		},
		{
			name: "empty lock file (the owner has not written yet): the kernel's record names the pid",
			prepare: func(t *testing.T, _ *Lock, path string) {
				if err := os.WriteFile(path, nil, 0o600); err != nil {
					t.Fatal(err)
				}
			},
			want:     []string{"pid:      " + strconv.Itoa(os.Getpid()), "command:  " + commandLineOrArgs()},
			wantNone: []string{"started:"},
			kernel:   true,
		},
		{
			name: "an earlier owner's details in the file: the kernel's record wins",
			prepare: func(t *testing.T, _ *Lock, path string) {
				if err := os.WriteFile(path, []byte(`{"pid":999999999,"command":"membus up --old","http_addr":"127.0.0.1:1"}`), 0o600); err != nil {
					t.Fatal(err)
				}
			},
			want:     []string{"pid:      " + strconv.Itoa(os.Getpid())},
			wantNone: []string{"999999999", "--old", "127.0.0.1:1"},
			kernel:   true,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := os.Stat("/proc/locks"); tc.kernel && err != nil {
				t.Skipf("no /proc/locks on this system: %v", err)
			}
			dir := t.TempDir()
			first, err := Acquire(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer first.Close()
			if tc.prepare != nil {
				tc.prepare(t, first, filepath.Join(dir, FileName))
			}
			second, err := Acquire(dir)
			if err == nil {
				second.Close()
				t.Fatal("a second Acquire on a held data dir succeeded")
			}
			var inUse *InUseError
			if !errors.Is(err, ErrInUse) || !errors.As(err, &inUse) {
				t.Fatalf("refusal = %v (%T), want an *InUseError matching ErrInUse", err, err)
			}
			msg := err.Error()
			for _, w := range append(tc.want, "data dir "+dir+" is in use") {
				if !strings.Contains(msg, w) {
					t.Errorf("refusal does not say %q:\n%s", w, msg)
				}
			}
			for _, w := range tc.wantNone {
				if strings.Contains(msg, w) {
					t.Errorf("refusal says %q:\n%s", w, msg)
				}
			}
		})
	}
}

// A lock file left behind (by a clean stop or by kill -9) blocks nothing: only a held flock
// does, and the kernel drops it with its process.
func TestReleasedOrStaleLockDoesNotBlock(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, FileName), []byte(`{"pid":1,"command":"membus up"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	first, err := Acquire(dir)
	if err != nil {
		t.Fatalf("a stale lock file blocked Acquire: %v", err)
	}
	first.Close()
	first.Close() // twice is harmless
	second, err := Acquire(dir)
	if err != nil {
		t.Fatalf("Acquire after Close: %v", err)
	}
	defer second.Close()
	b, err := os.ReadFile(filepath.Join(dir, FileName))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"pid":`+strconv.Itoa(os.Getpid())) {
		t.Fatalf("lock file = %s, want this process's pid", b)
	}
}

// commandLineOrArgs is this test binary's command line as the refusal prints it.
func commandLineOrArgs() string {
	if c := commandLine(os.Getpid()); c != "" {
		return c
	}
	return strings.Join(os.Args, " ")
}
