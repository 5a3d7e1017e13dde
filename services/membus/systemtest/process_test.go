package systemtest

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/membus/membus/pkg/bus"
	"github.com/membus/membus/pkg/testenv"
)

// The process-level tests run the real binary as a child process: built once per test run
// (binaryOnce), with its own data dir and free ports, its output kept in buffers.

var (
	binaryOnce sync.Once
	binaryPath string
	binaryErr  error
	binaryDir  string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binaryDir != "" {
		os.RemoveAll(binaryDir)
	}
	os.Exit(code)
}

// membusBinary builds the membus command once per test run and returns its path.
func membusBinary(t *testing.T) string {
	t.Helper()
	binaryOnce.Do(func() {
		dir, err := os.MkdirTemp("", "membus-bin-")
		if err != nil {
			binaryErr = err
			return
		}
		binaryDir = dir
		path := filepath.Join(dir, "membus")
		out, err := exec.Command("go", "build", "-o", path, "..").CombinedOutput()
		if err != nil {
			binaryErr = errors.New("go build: " + err.Error() + "\n" + string(out))
			return
		}
		binaryPath = path
	})
	if binaryErr != nil {
		t.Fatal(binaryErr)
	}
	return binaryPath
}

// childEnv is the test's environment without MEMBUS_* settings, so that a developer's or CI's
// configuration cannot leak into the child.
func childEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "MEMBUS_") {
			out = append(out, kv)
		}
	}
	return out
}

// syncBuffer is a bytes.Buffer safe for the child's writer and the test's reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// upProc is one `membus up` child process.
type upProc struct {
	t              *testing.T
	cmd            *exec.Cmd
	stdout, stderr *syncBuffer
	done           chan struct{}
	started        time.Time
	dataDir        string
	natsAddr       string
	httpAddr       string
}

// startUp starts `membus up` on dataDir with fresh loopback ports (unless given in extra flags,
// which come last and so win). The child is killed in t.Cleanup if it is still running.
func startUp(t *testing.T, dataDir string, extra ...string) *upProc {
	t.Helper()
	p := &upProc{t: t, stdout: &syncBuffer{}, stderr: &syncBuffer{}, done: make(chan struct{}),
		dataDir: dataDir, natsAddr: freeAddr(t), httpAddr: freeAddr(t)}
	args := append([]string{"up", "--data-dir", dataDir, "--nats-listen", p.natsAddr, "--http-addr", p.httpAddr}, extra...)
	p.cmd = exec.Command(membusBinary(t), args...)
	p.cmd.Env = childEnv()
	p.cmd.Stdout, p.cmd.Stderr = p.stdout, p.stderr
	p.started = time.Now()
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		_ = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		if !p.exited() {
			_ = p.cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Logf("membus up (pid %d) stdout:\n%s\nstderr (tail):\n%s", p.cmd.Process.Pid, p.stdout.String(), lastBytes(p.stderr.String(), 4000))
		}
	})
	return p
}

func (p *upProc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

var upLine = regexp.MustCompile(`membus is up in (\d+) ms`)

// waitReady waits up to 30 s for the ready line and returns the wall time from exec to it and
// the time the process reported itself.
func (p *upProc) waitReady() (wall time.Duration, reported time.Duration) {
	p.t.Helper()
	testenv.Eventually(p.t, 30*time.Second, 10*time.Millisecond, func() error {
		select {
		case <-p.done:
			p.t.Fatalf("membus up exited (%v) before it was ready", p.cmd.ProcessState)
		default:
		}
		m := upLine.FindStringSubmatch(p.stdout.String())
		if m == nil {
			return errors.New("membus up printed no ready line")
		}
		wall = time.Since(p.started)
		ms, _ := strconv.Atoi(m[1])
		reported = time.Duration(ms) * time.Millisecond
		return nil
	})
	return wall, reported
}

// waitExit waits up to timeout for the process to exit and returns its exit code (-1 when a
// signal killed it).
func (p *upProc) waitExit(timeout time.Duration) int {
	p.t.Helper()
	select {
	case <-p.done:
		return p.cmd.ProcessState.ExitCode()
	case <-time.After(timeout):
		p.t.Fatalf("membus up did not exit within %s", timeout)
		return 0
	}
}

// stop sends SIGTERM and requires a clean exit (code 0) within 30 s.
func (p *upProc) stop() {
	p.t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		p.t.Fatal(err)
	}
	if code := p.waitExit(30 * time.Second); code != 0 {
		p.t.Fatalf("membus up exited with %d after SIGTERM, want 0", code)
	}
}

// natsToken is the token `membus up` keeps in its data dir.
func (p *upProc) natsToken() string {
	p.t.Helper()
	b, err := os.ReadFile(filepath.Join(p.dataDir, "nats.token"))
	if err != nil {
		p.t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// connectBus connects to p's embedded NATS server as the client name, with the token of its
// data dir, and returns the connection (closed when the test ends, if not before), JetStream
// and the names of the default subject prefix.
func (p *upProc) connectBus(ctx context.Context, name string, opts ...nats.Option) (*nats.Conn, jetstream.JetStream, bus.Names) {
	p.t.Helper()
	nc, err := bus.Connect(ctx, "nats://"+p.natsAddr, p.natsToken(), name, opts...)
	if err != nil {
		p.t.Fatal(err)
	}
	p.t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		p.t.Fatal(err)
	}
	names, err := bus.NewNames("membus")
	if err != nil {
		p.t.Fatal(err)
	}
	return nc, js, names
}

var devKeyLine = regexp.MustCompile(`dev API key .*: (\S+)`)

// devKey is the dev API key printed at first start ("" when none was printed).
func (p *upProc) devKey() string {
	if m := devKeyLine.FindStringSubmatch(p.stdout.String()); m != nil {
		return m[1]
	}
	return ""
}

// runCLI runs a short membus command and returns its stdout, stderr and exit code.
func runCLI(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, membusBinary(t), args...)
	cmd.Env = childEnv()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exitErr *exec.ExitError
	if err != nil && !errors.As(err, &exitErr) {
		t.Fatalf("membus %s: %v", strings.Join(args, " "), err)
	}
	if ctx.Err() != nil {
		t.Fatalf("membus %s did not finish within 30 s; stderr: %s", strings.Join(args, " "), stderr.String())
	}
	return stdout.String(), stderr.String(), cmd.ProcessState.ExitCode()
}

func lastBytes(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}
