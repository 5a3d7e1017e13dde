package bus

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// testBus is an in-process JetStream server on a random port with the streams of prefix "t".
type testBus struct {
	url string
	nc  *nats.Conn
	js  jetstream.JetStream
	n   Names
}

func newTestBus(t *testing.T) testBus {
	t.Helper()
	s, err := StartEmbedded(EmbeddedConfig{DataDir: t.TempDir(), Listen: "127.0.0.1:0", Sync: "interval"})
	if err != nil {
		t.Fatalf("StartEmbedded: %v", err)
	}
	t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	nc, err := Connect(ctx, s.ClientURL(), "", t.Name())
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	n, err := NewNames("t")
	if err != nil {
		t.Fatal(err)
	}
	lim := DefaultStreamLimits()
	lim.TurnsMaxBytes, lim.CommitsMaxBytes, lim.Duplicates = 64<<20, 64<<20, time.Minute
	if err := EnsureStreams(ctx, js, n, lim); err != nil {
		t.Fatalf("EnsureStreams: %v", err)
	}
	return testBus{url: s.ClientURL(), nc: nc, js: js, n: n}
}

// eventually polls cond until it holds or the timeout passes.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for: %s", timeout, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestStartEmbeddedTakenPortIsAClearError(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	addr := ln.Addr().String()
	s, err := StartEmbedded(EmbeddedConfig{DataDir: t.TempDir(), Listen: addr})
	if err == nil {
		s.Shutdown()
		t.Fatal("StartEmbedded on a taken port succeeded")
	}
	if !errors.Is(err, ErrListen) {
		t.Errorf("err = %v, want ErrListen", err)
	}
	for _, want := range []string{addr, "--nats-listen", "MEMBUS_NATS_LISTEN"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

func TestStartEmbeddedRequiresTheToken(t *testing.T) {
	dir := t.TempDir()
	tok, err := LoadOrCreateToken(dir)
	if err != nil {
		t.Fatal(err)
	}
	s, err := StartEmbedded(EmbeddedConfig{DataDir: dir, Listen: "127.0.0.1:0", Token: tok})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { s.Shutdown(); s.WaitForShutdown() }()
	if !s.JetStreamConfig().SyncAlways {
		t.Error("SyncAlways is off by default; SPEC §7 wants it on")
	}
	if got := s.JetStreamConfig().StoreDir; !strings.HasPrefix(got, filepath.Join(dir, "nats")) {
		t.Errorf("StoreDir = %q, want under %s", got, filepath.Join(dir, "nats"))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if nc, err := Connect(ctx, s.ClientURL(), "", "no-token", nats.MaxReconnects(0)); err == nil {
		nc.Close()
		t.Fatal("connected without the token")
	}
	if nc, err := Connect(ctx, s.ClientURL(), "wrong", "bad-token", nats.MaxReconnects(0)); err == nil {
		nc.Close()
		t.Fatal("connected with a wrong token")
	}
	nc, err := Connect(ctx, s.ClientURL(), tok, "with-token")
	if err != nil {
		t.Fatalf("Connect with the token: %v", err)
	}
	nc.Close()
}

func TestStartEmbeddedSyncInterval(t *testing.T) {
	s, err := StartEmbedded(EmbeddedConfig{DataDir: t.TempDir(), Listen: "127.0.0.1:0", Sync: "interval"})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { s.Shutdown(); s.WaitForShutdown() }()
	if s.JetStreamConfig().SyncAlways {
		t.Error("Sync=interval still syncs always")
	}
	if _, err := StartEmbedded(EmbeddedConfig{DataDir: t.TempDir(), Listen: "127.0.0.1:0", Sync: "sometimes"}); err == nil {
		t.Error("unknown Sync value accepted")
	}
}

func TestLoadOrCreateToken(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	tok, err := LoadOrCreateToken(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(tok) != 64 || strings.Trim(tok, "0123456789abcdef") != "" {
		t.Fatalf("token %q is not 32 bytes of hex", tok)
	}
	fi, err := os.Stat(filepath.Join(dir, "nats.token"))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("token file mode %v, want 0600", fi.Mode().Perm())
	}
	again, err := LoadOrCreateToken(dir)
	if err != nil || again != tok {
		t.Fatalf("second load = %q, %v; want the same token", again, err)
	}
}
