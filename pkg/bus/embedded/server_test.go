package embedded

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

	"github.com/membus/membus/pkg/bus"
)

func TestStartEmbeddedTakenPortIsAClearError(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	addr := ln.Addr().String()
	s, err := Start(Config{DataDir: t.TempDir(), Listen: addr})
	if err == nil {
		s.Shutdown()
		t.Fatal("Start on a taken port succeeded")
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
	s, err := Start(Config{DataDir: dir, Listen: "127.0.0.1:0", Token: tok})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { s.Shutdown(); s.WaitForShutdown() }()
	if !s.JetStreamConfig().SyncAlways {
		t.Error("SyncAlways is off by default; docs/design.md §7 wants it on")
	}
	if got := s.JetStreamConfig().StoreDir; !strings.HasPrefix(got, filepath.Join(dir, "nats")) {
		t.Errorf("StoreDir = %q, want under %s", got, filepath.Join(dir, "nats"))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if nc, err := bus.Connect(ctx, s.ClientURL(), "", "no-token", nats.MaxReconnects(0)); err == nil {
		nc.Close()
		t.Fatal("connected without the token")
	}
	if nc, err := bus.Connect(ctx, s.ClientURL(), "wrong", "bad-token", nats.MaxReconnects(0)); err == nil {
		nc.Close()
		t.Fatal("connected with a wrong token")
	}
	nc, err := bus.Connect(ctx, s.ClientURL(), tok, "with-token")
	if err != nil {
		t.Fatalf("Connect with the token: %v", err)
	}
	nc.Close()
}

func TestStartEmbeddedSyncInterval(t *testing.T) {
	s, err := Start(Config{DataDir: t.TempDir(), Listen: "127.0.0.1:0", Sync: "interval"})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { s.Shutdown(); s.WaitForShutdown() }()
	if s.JetStreamConfig().SyncAlways {
		t.Error("Sync=interval still syncs always")
	}
	if _, err := Start(Config{DataDir: t.TempDir(), Listen: "127.0.0.1:0", Sync: "sometimes"}); err == nil {
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
