package bus

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

func TestVersionAtLeast(t *testing.T) {
	tests := []struct {
		name, have, want string
		ok, err          bool
	}{
		{"equal", "2.10.0", "2.10.0", true, false},
		{"newer patch", "2.10.1", "2.10.0", true, false},
		{"newer minor compares numerically, not as text", "2.11.0", "2.10.0", true, false},
		{"2.9 is older than 2.10", "2.9.25", "2.10.0", false, false},
		{"older major", "1.99.99", "2.10.0", false, false},
		{"newer major", "3.0.0", "2.10.0", true, false},
		{"v prefix is accepted", "v2.12.3", "2.10.0", true, false},
		{"pre-release sorts before its release", "2.10.0-RC.1", "2.10.0", false, false},
		{"pre-release of a newer version is newer", "2.11.0-beta", "2.10.0", true, false},
		{"build metadata is ignored", "2.10.0+abc", "2.10.0", true, false},
		{"garbage is an error", "latest", "2.10.0", false, true},
		{"two parts is an error", "2.10", "2.10.0", false, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ok, err := versionAtLeast(tc.have, tc.want)
			if (err != nil) != tc.err {
				t.Fatalf("versionAtLeast(%q, %q) err = %v, want error %v", tc.have, tc.want, err, tc.err)
			}
			if ok != tc.ok {
				t.Fatalf("versionAtLeast(%q, %q) = %v, want %v", tc.have, tc.want, ok, tc.ok)
			}
		})
	}
}

func TestConnectChecksJetStream(t *testing.T) {
	s, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: server.RANDOM_PORT, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	s.Start()
	defer func() { s.Shutdown(); s.WaitForShutdown() }()
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("server not ready")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	nc, err := Connect(ctx, s.ClientURL(), "", "no-js")
	if err == nil {
		nc.Close()
		t.Fatal("Connect accepted a server without JetStream")
	}
	if !errors.Is(err, ErrNoJetStream) {
		t.Fatalf("err = %v, want ErrNoJetStream", err)
	}
}

func TestConnectAcceptsTheEmbeddedServer(t *testing.T) {
	b := newTestBus(t)
	if ok, err := versionAtLeast(b.nc.ConnectedServerVersion(), MinServerVersion); !ok || err != nil {
		t.Fatalf("embedded server %s below %s", b.nc.ConnectedServerVersion(), MinServerVersion)
	}
}
