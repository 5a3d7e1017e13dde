// Package datadir gives a data dir one owner. A process that runs services on a data dir
// (`membus up`, `membus <service>`) holds an exclusive lock on <data>/membus.lock for its whole
// life: the embedded NATS server's JetStream store, the SQLite database and the local vector
// index in that dir are written by one process only. The lock is flock(2): the kernel releases
// it when the process exits however it exits (kill -9 included), so a stale lock file never
// blocks a restart, and the file itself is never removed (removing it would let a second
// process lock a new file while the first still holds the old one).
//
// The owner writes who it is into the lock file (pid, command line, start time, HTTP and NATS
// addresses), so a second process that finds the lock held can name the running one.
//
// `membus keys` does not take the lock: it works beside a running server by design
// (docs/design.md §11) and writes through SQLite's own locking (WAL, busy timeout), which is
// safe across processes.
package datadir

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// FileName is the lock file's name in the data dir.
const FileName = "membus.lock"

// ErrInUse: another process holds the data dir's lock. The error is an *InUseError that names
// the owner; match with errors.Is.
var ErrInUse = errors.New("data dir in use")

// Owner is what the lock file says about the process that holds it.
type Owner struct {
	PID      int       `json:"pid"`
	Command  string    `json:"command,omitempty"` // its command line, arguments separated by spaces
	Started  time.Time `json:"started"`
	HTTPAddr string    `json:"http_addr,omitempty"`
	NATSURL  string    `json:"nats_url,omitempty"`
}

// InUseError is the refusal: the data dir Dir is locked by Owner.
type InUseError struct {
	Dir   string
	Owner Owner // PID 0 when the owner could not be identified
}

func (e *InUseError) Unwrap() error { return ErrInUse }

func (e *InUseError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "data dir %s is in use by another membus process (it holds %s):", e.Dir, filepath.Join(e.Dir, FileName))
	o := e.Owner
	if o.PID == 0 {
		b.WriteString("\n  (its pid could not be read)")
	} else {
		fmt.Fprintf(&b, "\n  pid:      %d", o.PID)
	}
	if o.Command != "" {
		fmt.Fprintf(&b, "\n  command:  %s", o.Command)
	}
	if !o.Started.IsZero() {
		fmt.Fprintf(&b, "\n  started:  %s (%s ago)", o.Started.Format(time.RFC3339), time.Since(o.Started).Round(time.Second))
	}
	if o.HTTPAddr != "" {
		fmt.Fprintf(&b, "\n  HTTP API: http://%s", o.HTTPAddr)
	}
	if o.NATSURL != "" {
		fmt.Fprintf(&b, "\n  NATS:     %s", o.NATSURL)
	}
	stop := "stop it (Ctrl-C in its terminal"
	if o.PID != 0 {
		stop += fmt.Sprintf(", or kill %d", o.PID)
	}
	fmt.Fprintf(&b, "\n%s) and start again, or use another data dir (--data-dir / MEMBUS_DATA_DIR)", stop)
	return b.String()
}

// Lock is a held data dir lock. Close releases it.
type Lock struct {
	mu    sync.Mutex
	f     *os.File
	owner Owner
}

// Acquire creates dir if needed and takes its lock without waiting. When another process holds
// it, the error is an *InUseError naming that process (ErrInUse).
func Acquire(dir string) (*Lock, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("MEMBUS_DATA_DIR %s: %w", dir, err)
	}
	path := filepath.Join(dir, FileName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open the data dir lock %s: %w", path, err)
	}
	held, err := tryLock(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("lock the data dir %s: %w", path, err)
	}
	if !held {
		owner := holder(f)
		f.Close()
		return nil, &InUseError{Dir: dir, Owner: owner}
	}
	l := &Lock{f: f, owner: Owner{PID: os.Getpid(), Command: commandLine(os.Getpid()), Started: time.Now().UTC().Truncate(time.Second)}}
	if l.owner.Command == "" {
		l.owner.Command = strings.Join(os.Args, " ")
	}
	if err := l.write(); err != nil {
		l.Close()
		return nil, err
	}
	return l, nil
}

// Record adds the process's HTTP address and NATS URL to the lock file, once they are known.
func (l *Lock) Record(httpAddr, natsURL string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.owner.HTTPAddr, l.owner.NATSURL = httpAddr, natsURL
	return l.writeLocked()
}

func (l *Lock) write() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.writeLocked()
}

func (l *Lock) writeLocked() error {
	if l.f == nil {
		return errors.New("data dir lock: closed")
	}
	b, err := json.Marshal(l.owner)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	if err := l.f.Truncate(0); err != nil {
		return fmt.Errorf("write the data dir lock: %w", err)
	}
	if _, err := l.f.WriteAt(b, 0); err != nil {
		return fmt.Errorf("write the data dir lock: %w", err)
	}
	return nil
}

// Close releases the lock (closing the file releases the flock; so does the process's exit).
// The file stays, with the last owner's details; the next owner overwrites them.
func (l *Lock) Close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f != nil {
		l.f.Close()
		l.f = nil
	}
}

// holder identifies the process holding f's lock: the kernel's record of the lock holder (Linux
// /proc/locks) when there is one, its live command line from /proc, and what the holder wrote
// into the file when the pids agree (the file may still hold an earlier owner's details in the
// moment between a new owner's lock and its write).
func holder(f *os.File) Owner {
	var written Owner
	if b, err := os.ReadFile(f.Name()); err == nil {
		_ = json.Unmarshal(b, &written) // a torn or empty file leaves it zero
	}
	pid := lockHolderPID(f)
	if pid == 0 {
		pid = written.PID
	}
	if pid == 0 {
		return Owner{}
	}
	o := Owner{PID: pid}
	if written.PID == pid {
		o = written
	}
	if cmd := commandLine(pid); cmd != "" {
		o.Command = cmd
	}
	return o
}

// commandLine reads a process's command line from /proc ("" when it cannot be read).
func commandLine(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || len(b) == 0 {
		return ""
	}
	return strings.Join(strings.Split(strings.TrimRight(string(b), "\x00"), "\x00"), " ")
}
